// Package s3test runs a real S3 server for tests: versitygw (issue 28,
// pinned in tools/versitygw) over a temporary directory on a free loopback
// port, with one bucket made and ready.
//
// The binary is the one named by ONTOFLOW_TEST_VERSITYGW, else
// $(go env GOPATH)/bin/versitygw (where .ci/run builds it), else versitygw
// on PATH. Without one a test skips with the command that builds it, and
// fails under CI=true, where .ci/run must have built it.
//
// The package speaks S3 itself (a small Signature V4 signer) so that it
// needs no SDK: tests use Keys and Uploads to look for orphans.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"go/build"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvBinary names the versitygw binary to run, overriding the default path.
const EnvBinary = "ONTOFLOW_TEST_VERSITYGW"

// BuildHint is the command that builds the binary where Start looks for it.
const BuildHint = "cd tools/versitygw && go build -o \"$(go env GOPATH)/bin/versitygw\" github.com/versity/versitygw/cmd/versitygw (or run .ci/run)"

// Server is a running versitygw with one bucket.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint  string
	AccessKey string
	SecretKey string
	Region    string
	Bucket    string
	// Dir is the posix backend's root; the bucket is Dir/Bucket.
	Dir string

	t    testing.TB // nil when launched outside a test
	bin  string
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *lockedBuffer
}

// Binary returns the versitygw binary tests would run, or "" if none is
// installed.
func Binary() string {
	if p := os.Getenv(EnvBinary); p != "" {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "versitygw")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	return ""
}

// Start runs versitygw on a free loopback port over a temporary directory,
// makes the bucket and waits until it answers; it is stopped when the test
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("s3test: no versitygw binary (CI=true); build it: %s", BuildHint)
		}
		t.Skipf("s3test: no versitygw binary; set %s or build it: %s", EnvBinary, BuildHint)
	}
	s, err := Launch(bin, t.TempDir(), "")
	if s != nil {
		s.t = t
		t.Cleanup(s.Stop)
	}
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return s
}

// Launch runs bin over dir on addr ("" = a free loopback port), makes the
// bucket and waits until it answers, for programs that are not tests
// (cmd/davbench). The caller stops it; a non-nil Server comes back with an
// error only when it may still need stopping.
func Launch(bin, dir, addr string) (*Server, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("versitygw binary %s: %w", bin, err)
	}
	s := &Server{
		AccessKey: "ontoflowtestkey",
		SecretKey: "ontoflow-test-secret-0123456789",
		Region:    "us-east-1",
		Bucket:    "ontoflow-test",
		Dir:       dir,
		bin:       bin,
	}
	// A free port can be taken between its probe and versitygw's bind:
	// try a few.
	var err error
	for range 5 {
		s.addr = addr
		if addr == "" {
			if s.addr, err = freeAddr(); err != nil {
				return nil, err
			}
		}
		s.Endpoint = "http://" + s.addr
		if err = s.start(); err == nil || addr != "" {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := s.Do(ctx, http.MethodPut, "", nil, nil)
	if err != nil {
		return s, fmt.Errorf("create bucket %s: %w", s.Bucket, err)
	}
	// 409: the bucket is there from an earlier run over the same dir.
	if resp.Status != http.StatusOK && resp.Status != http.StatusConflict {
		return s, fmt.Errorf("create bucket %s: status %d: %s", s.Bucket, resp.Status, resp.Body)
	}
	return s, nil
}

// URL is the --webdav-store URL of prefix in the bucket.
func (s *Server) URL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&region=%s&path_style=true",
		s.Bucket, strings.Trim(prefix, "/"), s.Endpoint, s.Region)
}

// Env is the environment a child process needs to reach the bucket: the
// credentials of the standard AWS chain, and no instance-metadata look-up
// (it would leave loopback).
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// Stop kills the server at once (SIGKILL, as an outage would) and waits
// for it to exit. The directory and the port stay for Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		if s.t != nil {
			s.t.Errorf("s3test: versitygw (pid %d) still running 30s after SIGKILL", cmd.Process.Pid)
		}
	}
}

// Pid is the running server's process id, 0 when stopped (benchmarks
// read its CPU time).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Restart stops the server if it runs and starts it again on the same
// directory and port, waiting until it answers; the test fails if it
// cannot.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.restart(); err != nil {
		s.t.Fatalf("s3test: restart: %v", err)
	}
}

func (s *Server) restart() error {
	s.Stop()
	var err error
	// The port was ours a moment ago; a rebind can still race a client's
	// connection attempt, so retry briefly.
	for range 10 {
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// Log is what versitygw printed so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

// start runs the binary and waits until a signed request is answered.
func (s *Server) start() error {
	log := &lockedBuffer{}
	// --keep-alive: without it versitygw answers every request with
	// "Connection: close", so each S3 call pays a TCP connect and the
	// client's pool never reuses a connection (400 PUTs, 400 connects),
	// which no production S3 server does.
	cmd := exec.Command(s.bin,
		"--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", s.Region, "--port", s.addr, "--quiet", "--keep-alive",
		"posix", s.Dir)
	// A clean environment: versitygw reads many VGW_* and ROOT_* variables.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.Dir}
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done, s.log = cmd, done, log
	s.mu.Unlock()

	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("versitygw on %s exited at start: %s", s.addr, tail(log.String(), 2048))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := s.do(ctx, http.MethodGet, "/", nil, nil)
		cancel()
		if err == nil && resp.Status == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("versitygw on %s not ready after 30s (last: %v %v): %s", s.addr, err, resp.Status, tail(log.String(), 2048))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Response is an S3 answer read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a signed request for key in the bucket ("" = the bucket
// itself) and reads the answer.
func (s *Server) Do(ctx context.Context, method, key string, query map[string]string, body []byte) (Response, error) {
	return s.do(ctx, method, "/"+s.Bucket+"/"+strings.TrimPrefix(key, "/"), query, body)
}

func (s *Server) do(ctx context.Context, method, path string, query map[string]string, body []byte) (Response, error) {
	if path == "/"+s.Bucket+"/" {
		path = "/" + s.Bucket
	}
	req, err := http.NewRequestWithContext(ctx, method, s.Endpoint+uriEncode(path, false)+canonicalQuery(query), bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("s3test: %s %s: %w", method, path, err)
	}
	sign(req, path, query, body, s.AccessKey, s.SecretKey, s.Region, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("s3test: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("s3test: %s %s: read: %w", method, path, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

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

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
