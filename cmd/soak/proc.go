package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// proc is a running ontoflow process the soak drives and samples.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *lockedBuffer
	errOut *gcTrace
	done   chan error

	APIURL       string // "" for a worker
	TemporalAddr string // dev only
}

var (
	reAPI      = regexp.MustCompile(`API:\s+(\S+)/api/v1/`)
	reTemporal = regexp.MustCompile(`Temporal:\s+(\S+) \(namespace`)
)

// startProc runs `bin args...` with env added and waits for its banner.
// GODEBUG=gctrace=1 makes the Go runtime print the live heap after every
// collection on stderr: the only heap figure a worker (which has no HTTP
// listener) gives from outside.
func startProc(ctx context.Context, name, bin string, env []string, args ...string) (*proc, error) {
	p := &proc{name: name, out: &lockedBuffer{}, errOut: &gcTrace{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), "GODEBUG=gctrace=1"), env...)
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.errOut
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	deadline := time.After(3 * time.Minute)
	for !strings.Contains(p.out.String(), " ready in ") {
		select {
		case err := <-p.done:
			p.done <- err
			return nil, fmt.Errorf("%s exited before it was ready (%v):\n%s\n%s", name, err, p.out, p.errOut.tail(4096))
		case <-deadline:
			p.stop()
			return nil, fmt.Errorf("%s not ready after 3 minutes", name)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	banner := p.out.String()
	if m := reAPI.FindStringSubmatch(banner); m != nil {
		p.APIURL = m[1]
	}
	if m := reTemporal.FindStringSubmatch(banner); m != nil {
		p.TemporalAddr = m[1]
	}
	return p, nil
}

// exited reports the process's end, if it has ended.
func (p *proc) exited() (error, bool) {
	select {
	case err := <-p.done:
		p.done <- err
		return err, true
	default:
		return nil, false
	}
}

// stop sends SIGTERM (os.Interrupt on Windows) and waits up to a minute.
func (p *proc) stop() {
	if _, gone := p.exited(); gone {
		return
	}
	_ = p.cmd.Process.Signal(terminate)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// sample is one reading of a process.
type sample struct {
	RSS        int64 // bytes; from /proc
	Heap       int64 // bytes in use; -1 unknown
	Goroutines int   // -1 unknown
}

// read samples p: RSS from /proc/PID/status, heap and goroutines from its
// /metrics when it serves HTTP, else the live heap of its last GC trace.
func (p *proc) read(ctx context.Context) (sample, error) {
	s := sample{Heap: -1, Goroutines: -1}
	rss, err := rssOf(p.cmd.Process.Pid)
	if err != nil {
		return s, err
	}
	s.RSS = rss
	if p.APIURL != "" {
		m, err := scrape(ctx, p.APIURL+"/metrics")
		if err != nil {
			return s, fmt.Errorf("%s metrics: %w", p.name, err)
		}
		if v, ok := m["go_memstats_heap_inuse_bytes"]; ok {
			s.Heap = int64(v)
		}
		if v, ok := m["go_goroutines"]; ok {
			s.Goroutines = int(v)
		}
	}
	if s.Heap < 0 {
		s.Heap = p.errOut.liveHeap()
	}
	return s, nil
}

// rssOf reads VmRSS of a process (Linux).
func rssOf(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// scrape reads the unlabelled samples of a Prometheus text page.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[f[0]] = v
		}
	}
	return m, sc.Err()
}

// lockedBuffer collects a child's output while it is read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// gcTrace keeps a process's stderr tail and the live heap of its last
// gctrace line ("gc 12 @3.4s 2%: ... 40->42->21 MB, 44 MB goal, ...").
// Only the tail is kept so a long run does not grow the soak itself.
type gcTrace struct {
	mu   sync.Mutex
	last []byte
	live int64
	part []byte
}

var reGC = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

func (g *gcTrace) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.part = append(g.part, p...)
	for {
		i := bytes.IndexByte(g.part, '\n')
		if i < 0 {
			break
		}
		line := g.part[:i]
		if m := reGC.FindSubmatch(line); m != nil {
			mb, _ := strconv.ParseInt(string(m[3]), 10, 64)
			g.live = mb << 20
		} else {
			g.last = append(g.last, line...)
			g.last = append(g.last, '\n')
			if len(g.last) > 16<<10 {
				g.last = append([]byte(nil), g.last[len(g.last)-8<<10:]...)
			}
		}
		g.part = g.part[i+1:]
	}
	if len(g.part) > 64<<10 {
		g.part = g.part[:0]
	}
	return len(p), nil
}

func (g *gcTrace) liveHeap() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == 0 {
		return -1
	}
	return g.live
}

func (g *gcTrace) tail(n int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.last
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// runOnce runs `bin args...` to completion with stdin and returns its output.
func runOnce(bin, stdin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ontoflow %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

var _ io.Writer = (*gcTrace)(nil)
