//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// server is one WebDAV server under test. Both are driven by the same
// client code below; only the base URL, credentials and processes differ.
type server struct {
	name string
	base string // ends with "/": http://127.0.0.1:PORT/dav/
	user string
	pass string
	pids func() ([]int, error)
	// settle, if set, brings the server to its idle memory state before
	// the memory benchmark (see settleOnSignal).
	settle func() error
}

// newClient returns a client with enough idle connections for the
// concurrency used here, so every request after the first on a connection
// reuses it (as WebDAV clients do). Compression is off: neither server
// compresses, and Go's transparent gzip would only add a header.
func newClient() *http.Client {
	tr := &http.Transport{
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		// Large buffers keep the client's share of the two cores small:
		// it runs beside the server, and every syscall it saves is CPU the
		// server under test gets.
		WriteBufferSize: 256 << 10,
		ReadBufferSize:  256 << 10,
	}
	return &http.Client{Transport: tr}
}

func (s *server) do(ctx context.Context, c *http.Client, method, path string, hdr map[string]string, body io.Reader, size int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if body != nil {
		req.ContentLength = size
	}
	req.SetBasicAuth(s.user, s.pass)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s on %s: %w", method, path, s.name, err)
	}
	return resp, nil
}

// drain reads r to the end in 1 MiB reads (io.Discard's ReadFrom would
// read 8 KiB at a time) and passes what it read to w if w is not nil.
func drain(r io.Reader, w io.Writer) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if k > 0 && w != nil {
			_, _ = w.Write(buf[:k])
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// expect drains and closes resp, and fails unless its status is one of ok.
func expect(resp *http.Response, ok ...int) error {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if slices.Contains(ok, resp.StatusCode) {
		return nil
	}
	return fmt.Errorf("%s %s: status %d, want %v", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, ok)
}

const allprop = `<?xml version="1.0" encoding="utf-8"?>
<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`

// responseCounter counts closing response tags (</D:response>, whatever
// the namespace prefix) in a stream, so a PROPFIND's entries are checked
// without parsing XML on the client's CPU, which the server shares.
type responseCounter struct {
	n     int
	carry []byte
	bytes int64
}

var responseTag = []byte("response>")

// counterCarry is how much of the previous write is kept: a tag and a
// prefix ("</" + prefix + ":") split between two writes are still seen.
const counterCarry = 64

func (rc *responseCounter) Write(p []byte) (int, error) {
	rc.bytes += int64(len(p))
	buf := append(rc.carry, p...)
	old := len(rc.carry)
	for off := 0; ; {
		j := bytes.Index(buf[off:], responseTag)
		if j < 0 {
			break
		}
		j += off
		off = j + len(responseTag)
		// Matches ending inside the carry were counted by the last write.
		if off > old && isClosingTag(buf[:j]) {
			rc.n++
		}
	}
	k := min(len(buf), counterCarry)
	rc.carry = append(rc.carry[:0:0], buf[len(buf)-k:]...)
	return len(p), nil
}

// isClosingTag reports whether before ends with "</" or "</prefix:".
func isClosingTag(before []byte) bool {
	i := len(before)
	if i > 0 && before[i-1] == ':' {
		i--
		for i > 0 && before[i-1] != '/' && before[i-1] != '<' && before[i-1] != '>' && before[i-1] != ' ' {
			i--
		}
	}
	return i >= 2 && before[i-1] == '/' && before[i-2] == '<'
}

// propfind sends one Depth 1 allprop PROPFIND on folder and reads the whole
// answer; it returns the time to the last byte and the number of entries.
func (s *server) propfind(ctx context.Context, c *http.Client, folder string) (time.Duration, int, int64, error) {
	start := time.Now()
	resp, err := s.do(ctx, c, "PROPFIND", folder, map[string]string{
		"Depth":        "1",
		"Content-Type": "application/xml; charset=utf-8",
	}, strings.NewReader(allprop), int64(len(allprop)))
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMultiStatus {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 0, 0, 0, fmt.Errorf("PROPFIND %s on %s: status %d", folder, s.name, resp.StatusCode)
	}
	var rc responseCounter
	if _, err := drain(resp.Body, &rc); err != nil {
		return 0, 0, 0, fmt.Errorf("read PROPFIND %s on %s: %w", folder, s.name, err)
	}
	return time.Since(start), rc.n, rc.bytes, nil
}

// memResult is the memory a server's processes gained while answering one
// request.
type memResult struct {
	Before   int64 // KiB, sum of VmRSS over the server's processes
	Peak     int64 // KiB, growth at the peak (VmHWM / sampled VmRSS)
	Retained int64 // KiB, VmRSS growth one second after the answer
	Took     time.Duration
	Entries  int
}

// propfindMem measures the server's resident memory growth over one
// PROPFIND of folder. The growth of each process is its peak (VmHWM after
// the request when it rose, or the highest VmRSS sampled every 2 ms, which
// catches a peak that an earlier request had already set) minus its VmRSS
// before; the server's growth is the sum over its processes.
func (s *server) propfindMem(ctx context.Context, c *http.Client, folder string, wantEntries int) (memResult, error) {
	pids, err := s.pids()
	if err != nil {
		return memResult{}, err
	}
	before := snapshot(pids)
	peak := make(map[int]int64, len(pids))
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			for p, m := range snapshot(pids) {
				mu.Lock()
				peak[p] = max(peak[p], m.RSS)
				mu.Unlock()
			}
		}
	}()
	took, n, _, err := s.propfind(ctx, c, folder)
	close(stop)
	<-done
	if err != nil {
		return memResult{}, err
	}
	if n != wantEntries {
		return memResult{}, fmt.Errorf("PROPFIND %s on %s: %d entries, want %d", folder, s.name, n, wantEntries)
	}
	after := snapshot(pids)
	time.Sleep(time.Second)
	settled := snapshot(pids)
	r := memResult{Before: totalRSS(before), Took: took, Entries: n}
	for p, b := range before {
		top := peak[p]
		if a, ok := after[p]; ok {
			top = max(top, a.RSS)
			if a.HWM > b.HWM {
				top = max(top, a.HWM)
			}
		}
		if top > b.RSS {
			r.Peak += top - b.RSS
		}
	}
	r.Retained = totalRSS(settled) - r.Before
	return r, nil
}

// getParallel GETs path with n concurrent clients and returns MiB/s over
// the wall time of all of them.
func (s *server) getParallel(ctx context.Context, c *http.Client, path string, size int64, n int) (float64, error) {
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.do(ctx, c, http.MethodGet, path, nil, nil, 0)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs[i] = fmt.Errorf("GET %s on %s: status %d", path, s.name, resp.StatusCode)
				return
			}
			got, err := drain(resp.Body, nil)
			if err != nil {
				errs[i] = fmt.Errorf("read GET %s on %s: %w", path, s.name, err)
				return
			}
			if got != size {
				errs[i] = fmt.Errorf("GET %s on %s: %d bytes, want %d", path, s.name, got, size)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(size) * float64(n) / (1 << 20) / el.Seconds(), nil
}

// put uploads body to path and returns MiB/s.
func (s *server) put(ctx context.Context, c *http.Client, path string, body []byte) (float64, error) {
	start := time.Now()
	resp, err := s.do(ctx, c, http.MethodPut, path, map[string]string{"Content-Type": "application/octet-stream"}, bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return 0, err
	}
	if err := expect(resp, http.StatusCreated, http.StatusNoContent, http.StatusOK); err != nil {
		return 0, fmt.Errorf("%s: %w", s.name, err)
	}
	return float64(len(body)) / (1 << 20) / time.Since(start).Seconds(), nil
}

// putMany creates folder and PUTs count files of body into it with n
// concurrent clients; it returns requests per second (MKCOL not timed).
func (s *server) putMany(ctx context.Context, c *http.Client, folder string, body []byte, count, n int) (float64, error) {
	resp, err := s.do(ctx, c, "MKCOL", folder, nil, nil, 0)
	if err != nil {
		return 0, err
	}
	if err := expect(resp, http.StatusCreated); err != nil {
		return 0, fmt.Errorf("%s: %w", s.name, err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := time.Now()
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(count) {
					return
				}
				p := fmt.Sprintf("%sf-%04d.bin", folder, i)
				resp, err := s.do(ctx, c, http.MethodPut, p, map[string]string{"Content-Type": "application/octet-stream"}, bytes.NewReader(body), int64(len(body)))
				if err == nil {
					err = expect(resp, http.StatusCreated)
				}
				if err != nil {
					errs[w] = fmt.Errorf("%s: %w", s.name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(count) / el.Seconds(), nil
}

// cpu is the server's CPU time so far in seconds (all its processes).
func (s *server) cpu() float64 {
	pids, err := s.pids()
	if err != nil {
		return 0
	}
	return cpuTime(pids)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
