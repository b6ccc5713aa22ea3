package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The end-to-end tests run the real ontoflow command as child processes.
// Instead of building a second 200 MB binary, the test binary re-executes
// itself: with runMainEnv set, TestMain runs main() with the given arguments.
const runMainEnv = "ONTOFLOW_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lockedBuffer collects a child's output while the test reads it.
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

// proc is a running ontoflow child process.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan error

	APIURL       string
	TemporalAddr string
	UIURL        string
	// MetricsURL is where /metrics is served on --metrics-addr.
	MetricsURL string
	// AdminPassword is set when this start created the admin user.
	AdminPassword string
}

var (
	reAPI      = regexp.MustCompile(`API:\s+(\S+)/api/v1/`)
	reTemporal = regexp.MustCompile(`Temporal:\s+(\S+) \(namespace`)
	reUI       = regexp.MustCompile(`Temporal UI:\s+(\S+)`)
	reMetrics  = regexp.MustCompile(`Metrics:\s+(\S+)`)
	rePassword = regexp.MustCompile(`Created user "[^"]+" with password (\S+)`)
)

// ontoflow runs `ontoflow args...` to completion and returns its output.
func ontoflow(t *testing.T, stdin string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// start runs a long-lived ontoflow command and waits for its banner.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start ontoflow %v: %v", args, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("ontoflow %v stderr (last 4 KiB):\n%s", args, tail(p.stderr.String(), 4096))
		}
	})

	deadline := time.After(3 * time.Minute)
	for !strings.Contains(p.stdout.String(), " ready in ") {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("ontoflow %v exited before it was ready (%v)\nstdout:\n%s\nstderr:\n%s", args, err, p.stdout, p.stderr)
		case <-deadline:
			t.Fatalf("ontoflow %v not ready after 3 minutes\nstdout:\n%s\nstderr:\n%s", args, p.stdout, p.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	banner := p.stdout.String()
	if m := reAPI.FindStringSubmatch(banner); m != nil {
		p.APIURL = m[1]
	}
	if m := reTemporal.FindStringSubmatch(banner); m != nil {
		p.TemporalAddr = m[1]
	}
	if m := reUI.FindStringSubmatch(banner); m != nil {
		p.UIURL = m[1]
	}
	if m := reMetrics.FindStringSubmatch(banner); m != nil {
		p.MetricsURL = m[1]
	}
	if m := rePassword.FindStringSubmatch(banner); m != nil {
		p.AdminPassword = m[1]
	}
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop() {
	p.t.Helper()
	p.terminate()
	p.waitExit()
}

// terminate sends SIGTERM without waiting.
func (p *proc) terminate() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM: %v", err)
	}
}

// waitExit waits for the process to exit cleanly.
func (p *proc) waitExit() {
	p.t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			p.t.Fatalf("ontoflow did not exit cleanly on SIGTERM: %v\nstderr:\n%s", err, p.stderr)
		}
	case <-time.After(60 * time.Second):
		p.t.Fatalf("ontoflow still running 60s after SIGTERM\nstderr:\n%s", p.stderr)
	}
}

// kill ends the process at once (SIGKILL), as a crash would.
func (p *proc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(30 * time.Second):
	}
}

// client is an HTTP client for one user of one process.
type client struct {
	t                  *testing.T
	base               string
	user, pass, bearer string
	// temporal is the Temporal frontend the server uses ("" = unknown),
	// for tests that look at workflows themselves.
	temporal string
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// errorCode is the code of a JSON error body ("" if the body is not one).
func (r response) errorCode() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

func (c client) do(method, path string, body any, hdr ...string) response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			c.t.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(js)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		c.t.Fatalf("request: %v", err)
	}
	if _, ok := body.(string); !ok && body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	switch {
	case c.bearer != "":
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	case c.user != "":
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// must is do that fails the test unless the status is want.
func (c client) must(want int, method, path string, body any, hdr ...string) response {
	c.t.Helper()
	r := c.do(method, path, body, hdr...)
	if r.Status != want {
		c.t.Fatalf("%s %s: status %d, want %d; body: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// waitHTTP polls url until it answers 200.
func waitHTTP(t *testing.T, url string) response {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
			}
			err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
