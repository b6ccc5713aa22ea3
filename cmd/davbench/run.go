//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type runConfig struct {
	workdir      string
	script       string
	apachePort   int
	ontoflowPort int
	user, pass   string
	hash         string
	runs         int
	rounds       int
	only         map[string]bool
	cpuprofile   string
	out          string
	files10k     int
	files100k    int
	bigMiB       int
	smallCount   int
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var cfg runConfig
	var only string
	fs.StringVar(&cfg.workdir, "workdir", "/tmp/davbench", "directory for both servers' trees, databases and logs (kept between runs; trees are reused)")
	fs.StringVar(&cfg.script, "script", "scripts/apache-webdav.sh", "the Apache start/stop script")
	fs.IntVar(&cfg.apachePort, "apache-port", 8091, "Apache's loopback port")
	fs.IntVar(&cfg.ontoflowPort, "ontoflow-port", 8092, "Ontoflow's loopback port")
	fs.StringVar(&cfg.user, "user", "bench", "user on both servers")
	fs.StringVar(&cfg.pass, "password", "bench-password-1", "password on both servers")
	fs.StringVar(&cfg.hash, "apache-hash", "sha", "Apache's htpasswd hash: sha or apr1")
	fs.IntVar(&cfg.runs, "runs", 7, "timed PROPFINDs of the 10,000-file folder per server (median reported)")
	fs.IntVar(&cfg.rounds, "rounds", 3, "timed rounds of GET / PUT / small PUT per server (median reported)")
	fs.StringVar(&only, "only", "mem,propfind,get,put,small", "benchmarks to run, comma-separated")
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "CPU profile of the Ontoflow serve child over the whole run")
	fs.StringVar(&cfg.out, "out", "", "also write the Markdown results to FILE")
	fs.IntVar(&cfg.files10k, "files", 10000, "files in the timed PROPFIND folder")
	fs.IntVar(&cfg.files100k, "mem-files", 100000, "files in the memory PROPFIND folder")
	fs.IntVar(&cfg.bigMiB, "big-mib", 100, "size of the GET / PUT file in MiB")
	fs.IntVar(&cfg.smallCount, "small", 1000, "4 KiB files PUT by 8 clients per round")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.only = map[string]bool{}
	for _, b := range strings.Split(only, ",") {
		cfg.only[strings.TrimSpace(b)] = true
	}
	wd, err := filepath.Abs(cfg.workdir)
	if err != nil {
		return fmt.Errorf("resolve workdir: %w", err)
	}
	cfg.workdir = wd
	if cfg.script, err = filepath.Abs(cfg.script); err != nil {
		return fmt.Errorf("resolve script: %w", err)
	}

	rep := &report{command: "davbench run " + strings.Join(args, " "), loadBefore: loadAvg()}
	slog.Info("preparing trees", "workdir", cfg.workdir)
	big := make([]byte, cfg.bigMiB<<20)
	fillRandom(big, 1)
	small := make([]byte, 4096)
	fillRandom(small, 2)

	ontoRoot := filepath.Join(cfg.workdir, "ontoflow", "files")
	ontoDB := filepath.Join(cfg.workdir, "ontoflow", "ontoflow.db")
	userID, err := prepareOntoflowUser(ctx, ontoDB, cfg.user, cfg.pass)
	if err != nil {
		return err
	}
	apacheDir := filepath.Join(cfg.workdir, "apache")
	trees := []string{filepath.Join(ontoRoot, userID), filepath.Join(apacheDir, "htdocs", "dav")}
	for _, t := range trees {
		if err := populate(t, "p10k", cfg.files10k); err != nil {
			return err
		}
		if err := populate(t, "p100k", cfg.files100k); err != nil {
			return err
		}
		if err := writeIfDifferent(filepath.Join(t, "big.bin"), big); err != nil {
			return err
		}
	}
	// The workdir's parents must be traversable by Apache's www-data workers.
	if err := os.Chmod(cfg.workdir, 0o755); err != nil {
		return fmt.Errorf("open up workdir: %w", err)
	}

	apache, stopApache, err := startApache(ctx, cfg, apacheDir)
	if err != nil {
		return err
	}
	defer stopApache()
	onto, stopOnto, err := startOntoflow(cfg, ontoRoot, ontoDB)
	if err != nil {
		return err
	}
	defer stopOnto()
	servers := []*server{apache, onto}
	for _, s := range servers {
		if err := waitReady(ctx, s); err != nil {
			return err
		}
		// Warm-up: authentication (Ontoflow's first Basic verification is
		// an argon2id hash, then cached), database connections, code pages.
		c := newClient()
		if _, _, _, err := s.propfind(ctx, c, ""); err != nil {
			return fmt.Errorf("warm up: %w", err)
		}
		c.CloseIdleConnections()
		pids, err := s.pids()
		if err != nil {
			return err
		}
		rep.idle = append(rep.idle, float64(totalRSS(snapshot(pids)))/1024)
	}

	// Before starting, how busy was the machine? Five seconds of /proc/stat
	// with nothing of ours running.
	p0, k0 := machineBusy()
	time.Sleep(5 * time.Second)
	p1, k1 := machineBusy()
	rep.busyBefore = (p1 - p0 + k1 - k0) / 5 / float64(runtime.NumCPU()) * 100

	b := &benches{cfg: cfg, rep: rep, servers: servers, big: big, small: small}
	mStart, kStart := machineBusy()
	selfStart := selfCPU()
	srvStart := []float64{apache.cpu(), onto.cpu()}
	wallStart := time.Now()
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		// Memory first, right after start: the other benchmarks move
		// 100 MiB bodies and would leave high-water marks behind.
		{"mem", b.mem},
		{"propfind", b.propfind},
		{"get", b.get},
		{"put", b.put},
		{"small", b.smallPut},
	}
	for _, st := range steps {
		if !cfg.only[st.name] {
			continue
		}
		slog.Info("benchmark", "name", st.name)
		if err := st.fn(ctx); err != nil {
			return fmt.Errorf("benchmark %s: %w", st.name, err)
		}
	}
	// Whatever the machine spent beyond the two servers and this client
	// was other work competing for the two cores during the measurements.
	own := selfCPU() - selfStart + apache.cpu() - srvStart[0] + onto.cpu() - srvStart[1]
	mEnd, kEnd := machineBusy()
	rep.otherCPU = mEnd - mStart - own
	rep.kernelCPU = kEnd - kStart
	rep.wall = time.Since(wallStart)
	rep.loadAfter = loadAvg()
	rep.apacheVersion = apacheVersion(ctx)
	md := rep.markdown()
	fmt.Print(md)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
	}
	return nil
}

func fillRandom(b []byte, seed uint64) {
	r := rand.NewChaCha8([32]byte{byte(seed)})
	_, _ = r.Read(b)
}

func prepareOntoflowUser(ctx context.Context, dbPath, user, pass string) (string, error) {
	db, err := openDB(ctx, dbPath)
	if err != nil {
		return "", err
	}
	id, err := ensureUser(ctx, db, user, pass)
	// Closed before the serve child opens the same file.
	if sqlDB, derr := db.DB(); derr == nil {
		sqlDB.Close()
	}
	return id, err
}

// populate makes dir/name hold exactly n small files (kept between runs).
// Both servers get byte-identical trees: same names, sizes, .txt type.
func populate(dir, name string, n int) error {
	p := filepath.Join(dir, name)
	if f, err := os.Open(p); err == nil {
		names, _ := f.Readdirnames(-1)
		f.Close()
		if len(names) == n {
			return nil
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("clear %s: %w", p, err)
		}
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	slog.Info("populating", "dir", p, "files", n)
	content := []byte(strings.Repeat("davbench file content line\n", 4))
	for i := range n {
		fp := filepath.Join(p, fmt.Sprintf("file-%06d.txt", i))
		if err := os.WriteFile(fp, content, 0o644); err != nil {
			return fmt.Errorf("populate %s: %w", p, err)
		}
	}
	return nil
}

func writeIfDifferent(path string, b []byte) error {
	if st, err := os.Stat(path); err == nil && st.Size() == int64(len(b)) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func startApache(ctx context.Context, cfg runConfig, dir string) (*server, func(), error) {
	args := []string{"start", "--dir", dir, "--port", strconv.Itoa(cfg.apachePort),
		"--user", cfg.user, "--password", cfg.pass, "--hash", cfg.hash}
	cmd := exec.CommandContext(ctx, cfg.script, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("start apache (%s %s): %w", cfg.script, strings.Join(args, " "), err)
	}
	stop := func() {
		c := exec.Command(cfg.script, "stop", "--dir", dir)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			slog.Error("stop apache", "err", err)
		}
	}
	pidFile := filepath.Join(dir, "var", "httpd.pid")
	s := &server{
		name: "Apache",
		base: fmt.Sprintf("http://127.0.0.1:%d/dav/", cfg.apachePort),
		user: cfg.user, pass: cfg.pass,
		pids: func() ([]int, error) {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return nil, fmt.Errorf("read apache pid file: %w", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return nil, fmt.Errorf("parse apache pid file: %w", err)
			}
			return withChildren(pid), nil
		},
	}
	return s, stop, nil
}

func startOntoflow(cfg runConfig, root, dbPath string) (*server, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find own executable: %w", err)
	}
	dir := filepath.Dir(root)
	args := []string{"serve", "--root", root, "--db", dbPath,
		"--addr", fmt.Sprintf("127.0.0.1:%d", cfg.ontoflowPort),
		"--log", filepath.Join(dir, "access.log")}
	if cfg.cpuprofile != "" {
		p, err := filepath.Abs(cfg.cpuprofile)
		if err != nil {
			return nil, nil, fmt.Errorf("resolve cpuprofile: %w", err)
		}
		args = append(args, "--cpuprofile", p)
	}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, nil, fmt.Errorf("create serve log: %w", err)
	}
	// Not CommandContext: the child must get SIGTERM (to flush its CPU
	// profile), not SIGKILL, when the run ends.
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("start serve child: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				slog.Error("serve child", "err", err, "log", logf.Name())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
	}
	pid := cmd.Process.Pid
	s := &server{
		name: "Ontoflow",
		settle: func() error {
			if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
				return fmt.Errorf("signal serve child: %w", err)
			}
			time.Sleep(time.Second)
			return nil
		},
		base: fmt.Sprintf("http://127.0.0.1:%d/webdav/", cfg.ontoflowPort),
		user: cfg.user, pass: cfg.pass,
		pids: func() ([]int, error) {
			select {
			case err := <-exited:
				exited <- err
				return nil, fmt.Errorf("serve child exited (%v); see %s", err, logf.Name())
			default:
			}
			return []int{pid}, nil
		},
	}
	return s, stop, nil
}

func waitReady(ctx context.Context, s *server) error {
	c := newClient()
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.pids(); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := s.do(rctx, c, http.MethodOptions, "", nil, nil, 0)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
		if err == nil {
			if resp.StatusCode >= 400 {
				return fmt.Errorf("%s answers OPTIONS with %d", s.name, resp.StatusCode)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 30s: %w", s.name, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func apacheVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "/usr/sbin/apache2", "-v").Output()
	if err != nil {
		return "?"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(strings.TrimPrefix(line, "Server version:"))
}

// benches holds what every benchmark needs.
type benches struct {
	cfg     runConfig
	rep     *report
	servers []*server // Apache first, Ontoflow second
	big     []byte
	small   []byte
}

// quiesce writes the workdir's dirty pages back to disk, then waits until
// neither server has used CPU for 100 ms (at most 10 s). Work a server
// defers past its response (Ontoflow hashes large uploads in the
// background) and the kernel's write-back of what a round wrote must
// neither overlap the other server's measurement nor the next round; the
// CPU figures, taken after quiescing, include the servers' share.
func (b *benches) quiesce() {
	if d, err := os.Open(b.cfg.workdir); err == nil {
		if err := unix.Syncfs(int(d.Fd())); err != nil {
			slog.Warn("syncfs", "err", err)
		}
		d.Close()
	}
	total := func() float64 {
		var t float64
		for _, s := range b.servers {
			t += s.cpu()
		}
		return t
	}
	prev := total()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		cur := total()
		if cur == prev {
			return
		}
		prev = cur
	}
	slog.Warn("servers still busy after 10 s; measuring anyway")
}

func (b *benches) mem(ctx context.Context) error {
	var res [2]memResult
	for i, s := range b.servers {
		if s.settle != nil {
			if err := s.settle(); err != nil {
				return err
			}
		}
		c := newClient()
		b.quiesce()
		r, err := s.propfindMem(ctx, c, "p100k/", b.cfg.files100k+1)
		c.CloseIdleConnections()
		if err != nil {
			return err
		}
		res[i] = r
	}
	detail := func(r memResult) string {
		return fmt.Sprintf("RSS before %.1f MiB, %.1f MiB still held 1 s later, answer in %d ms",
			float64(r.Before)/1024, float64(r.Retained)/1024, r.Took.Milliseconds())
	}
	a, o := float64(res[0].Peak)/1024, float64(res[1].Peak)/1024
	b.rep.add(row{
		name:   fmt.Sprintf("PROPFIND Depth 1 allprop, %s files: server RSS growth", thousands(b.cfg.files100k)),
		apache: fmt.Sprintf("+%.1f MiB", a), onto: fmt.Sprintf("+%.1f MiB", o),
		ratio: ratio(o, a), target: "≤ 8 MiB", met: o <= 8,
		notes: "Apache: " + detail(res[0]) + ". Ontoflow: " + detail(res[1]) + ".",
	})
	return nil
}

func (b *benches) propfind(ctx context.Context) error {
	var ms [2][]float64
	var size [2]int64
	var cpu [2]float64
	clients := []*http.Client{newClient(), newClient()}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	for run := -2; run < b.cfg.runs; run++ { // runs -2 and -1 warm caches up
		for i, s := range b.servers {
			b.quiesce()
			c0 := s.cpu()
			d, n, sz, err := s.propfind(ctx, clients[i], "p10k/")
			if err != nil {
				return err
			}
			if run >= 0 {
				b.quiesce()
				cpu[i] += s.cpu() - c0
			}
			if n != b.cfg.files10k+1 {
				return fmt.Errorf("PROPFIND p10k on %s: %d entries, want %d", s.name, n, b.cfg.files10k+1)
			}
			size[i] = sz
			if run >= 0 {
				ms[i] = append(ms[i], float64(d.Microseconds())/1000)
			}
		}
	}
	a, o := median(ms[0]), median(ms[1])
	b.rep.add(row{
		name:   fmt.Sprintf("PROPFIND Depth 1 allprop, %s files (median of %d)", thousands(b.cfg.files10k), b.cfg.runs),
		apache: fmt.Sprintf("%.0f ms", a), onto: fmt.Sprintf("%.0f ms", o),
		ratio: ratio(o, a), target: "≤ 0.5x", met: o <= 0.5*a,
		notes: fmt.Sprintf("Apache runs %s ms, %.1f MB answer, server CPU %.0f ms a run; Ontoflow runs %s ms, %.1f MB answer, server CPU %.0f ms a run.",
			list(ms[0]), float64(size[0])/1e6, 1000*cpu[0]/float64(b.cfg.runs),
			list(ms[1]), float64(size[1])/1e6, 1000*cpu[1]/float64(b.cfg.runs)),
	})
	return nil
}

func (b *benches) get(ctx context.Context) error {
	var mibs [2][]float64
	var cpu, client [2]float64
	for round := -1; round < b.cfg.rounds; round++ { // round -1 warms up
		for i, s := range b.servers {
			c := newClient()
			b.quiesce()
			c0, l0 := s.cpu(), selfCPU()
			v, err := s.getParallel(ctx, c, "big.bin", int64(len(b.big)), 4)
			c.CloseIdleConnections()
			if err != nil {
				return err
			}
			if round >= 0 {
				mibs[i] = append(mibs[i], v)
				b.quiesce()
				cpu[i] += s.cpu() - c0
				client[i] += selfCPU() - l0
			}
		}
	}
	// The client's receive side is the same code for both servers; its CPU
	// shows how much of the two cores was left to the server.
	mib := float64(4 * b.cfg.bigMiB * b.cfg.rounds)
	clientNote := fmt.Sprintf(" Client CPU: %.0f ms per 100 MiB against Apache, %.0f against Ontoflow.",
		client[0]/mib*100*1000, client[1]/mib*100*1000)
	b.addThroughput(fmt.Sprintf("GET %d MiB, 4 clients (median of %d)", b.cfg.bigMiB, b.cfg.rounds), "MiB/s", mibs,
		cpuNote(cpu, mib, "ms per 100 MiB", 100*1000)+clientNote)
	return nil
}

func (b *benches) put(ctx context.Context) error {
	var mibs [2][]float64
	var cpu [2]float64
	// Round -1 creates the file; the timed rounds replace it, which is the
	// case atomicity is about (a reader keeps seeing the old version).
	for round := -1; round < b.cfg.rounds; round++ {
		for i, s := range b.servers {
			c := newClient()
			b.quiesce()
			c0 := s.cpu()
			v, err := s.put(ctx, c, "put-big.bin", b.big)
			c.CloseIdleConnections()
			if err != nil {
				return err
			}
			if round >= 0 {
				mibs[i] = append(mibs[i], v)
				b.quiesce()
				cpu[i] += s.cpu() - c0
			}
		}
	}
	b.addThroughput(fmt.Sprintf("PUT %d MiB replacing a file, 1 client (median of %d)", b.cfg.bigMiB, b.cfg.rounds), "MiB/s", mibs,
		cpuNote(cpu, float64(b.cfg.bigMiB*b.cfg.rounds), "ms per 100 MiB", 100*1000))
	return nil
}

func (b *benches) smallPut(ctx context.Context) error {
	var rps [2][]float64
	var cpu [2]float64
	stamp := time.Now().UTC().Format("20060102T150405")
	for round := -1; round < b.cfg.rounds; round++ {
		for i, s := range b.servers {
			c := newClient()
			count := b.cfg.smallCount
			if round < 0 {
				count = 200
			}
			folder := fmt.Sprintf("small-%s-%d/", stamp, round+1)
			b.quiesce()
			c0 := s.cpu()
			v, err := s.putMany(ctx, c, folder, b.small, count, 8)
			c.CloseIdleConnections()
			if err != nil {
				return err
			}
			if round >= 0 {
				rps[i] = append(rps[i], v)
				b.quiesce()
				cpu[i] += s.cpu() - c0
			}
		}
	}
	b.addThroughput(fmt.Sprintf("PUT %s x 4 KiB new files, 8 clients (median of %d)", thousands(b.cfg.smallCount), b.cfg.rounds), "req/s", rps,
		cpuNote(cpu, float64(b.cfg.smallCount*b.cfg.rounds), "µs per request", 1e6))
	return nil
}

// cpuNote describes the servers' CPU time per unit of work: units is the
// work done in the timed rounds, scale converts seconds per unit to what
// label names.
func cpuNote(cpu [2]float64, units float64, label string, scale float64) string {
	if units == 0 {
		return ""
	}
	return fmt.Sprintf(" Server CPU (user+system, including work finished after the response): Apache %.0f, Ontoflow %.0f %s.",
		cpu[0]/units*scale, cpu[1]/units*scale, label)
}

func (b *benches) addThroughput(name, unit string, v [2][]float64, extra string) {
	a, o := median(v[0]), median(v[1])
	b.rep.add(row{
		name:   name,
		apache: fmt.Sprintf("%s %s", thousands(int(a+0.5)), unit), onto: fmt.Sprintf("%s %s", thousands(int(o+0.5)), unit),
		ratio: ratio(o, a), target: "≥ 2x", met: o >= 2*a,
		notes: fmt.Sprintf("Apache rounds %s; Ontoflow rounds %s (%s).", list(v[0]), list(v[1]), unit) + extra,
	})
}

func ratio(o, a float64) string {
	if a == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", o/a)
}

func list(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(s, ", ")
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}

// buildRev may name the handler's commit at link time (-ldflags
// "-X main.buildRev=..."), for builds from an exported tree without .git.
var buildRev string

// buildRevision names the commit the handler was built from (go build
// -buildvcs=true stamps it), so results can be tied to a version of webdav/.
func buildRevision() string {
	if buildRev != "" {
		return "commit " + buildRev + " (exported clean tree)"
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "build information unavailable"
	}
	var rev, when, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "commit unknown (build with go build -buildvcs=true to record it)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	out := "commit " + rev + " (" + when + ")"
	if modified == "true" {
		out += ", tree not clean (uncommitted or untracked files somewhere)"
	}
	return out
}

type row struct {
	name, apache, onto, ratio, target string
	met                               bool
	notes                             string
}

type report struct {
	command               string
	loadBefore, loadAfter string
	busyBefore            float64       // % of all CPUs busy in the 5 s before the benchmarks
	otherCPU              float64       // CPU seconds used by other processes during them
	kernelCPU             float64       // CPU seconds in irq/softirq/steal during them
	wall                  time.Duration // duration of the benchmarks
	apacheVersion         string
	idle                  []float64 // MiB, Apache then Ontoflow
	rows                  []row
}

func (r *report) add(x row) { r.rows = append(r.rows, x) }

func (r *report) markdown() string {
	var sb strings.Builder
	cpus, model, mem, kernel := machineFacts()
	fmt.Fprintf(&sb, "Ontoflow: %s.\n\n", buildRevision())
	fmt.Fprintf(&sb, "Machine: %d CPUs (nproc %d), %s, MemTotal %s, Linux %s; %s; %s. Load average before %s, after %s. "+
		"CPUs %.0f%% busy in the 5 s before the benchmarks; during the %.0f s of benchmarks other processes used %.1f CPU-seconds, interrupts/softirq (loopback TCP)/steal %.1f.\n\n",
		cpus, runtime.NumCPU(), model, mem, kernel, runtime.Version(), r.apacheVersion, r.loadBefore, r.loadAfter,
		r.busyBefore, r.wall.Seconds(), r.otherCPU, r.kernelCPU)
	if len(r.idle) == 2 {
		fmt.Fprintf(&sb, "Idle RSS after warm-up: Apache %.1f MiB (all processes), Ontoflow %.1f MiB.\n\n", r.idle[0], r.idle[1])
	}
	sb.WriteString("| benchmark | Apache mod_dav | Ontoflow | Ontoflow / Apache | target | met |\n|---|---|---|---|---|---|\n")
	for _, x := range r.rows {
		met := "yes"
		if !x.met {
			met = "**no**"
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", x.name, x.apache, x.onto, x.ratio, x.target, met)
	}
	sb.WriteString("\n")
	for _, x := range r.rows {
		fmt.Fprintf(&sb, "- %s: %s\n", x.name, x.notes)
	}
	fmt.Fprintf(&sb, "\nCommand: `%s`\n", r.command)
	return sb.String()
}
