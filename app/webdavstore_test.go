package app_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/s3test"
)

// lockedLog is a log destination safe for the server's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// storeProbe is what an operator's probe and a WebDAV client see.
type storeProbe struct {
	ready      int
	readyTook  time.Duration
	put        int
	retryAfter string
}

func probeStore(t *testing.T, base, name string) storeProbe {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	var p storeProbe
	start := time.Now()
	defer func() { t.Logf("%s: %+v, all in %s", name, p, time.Since(start).Round(time.Millisecond)) }()
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	resp.Body.Close()
	p.ready = resp.StatusCode
	p.readyTook = time.Since(start)
	req, err := http.NewRequest(http.MethodPut, base+"/webdav/"+name, strings.NewReader("four kilobytes, give or take"))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", adminPassword)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", name, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	p.put, p.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	return p
}

// An S3 contents store that cannot be reached is the operator's to find:
// /readyz is not 200, and a WebDAV request that needs the store answers
// 503 with Retry-After, the cause in the log; once the store is back
// both recover without a restart. A bucket that does not exist is such a
// store (before: /readyz 200 and every PUT a 500 on S3's 404), and so is
// an endpoint that is down (issue 45).
func TestWebDAVStoreUnreachable(t *testing.T) {
	s3 := s3test.Start(t)
	for _, kv := range s3.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}

	t.Run("missing bucket", func(t *testing.T) {
		logs := &lockedLog{}
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		store := strings.Replace(s3.URL("nobucket"), "s3://"+s3.Bucket+"/", "s3://no-such-bucket-45/", 1)
		a := devtest.Start(t, adminPassword, []string{"--webdav-store", store}, log)
		p := probeStore(t, a.APIURL, "a.txt")
		if p.ready == http.StatusOK {
			t.Errorf("/readyz answered 200 over a bucket that does not exist")
		}
		if p.put != http.StatusServiceUnavailable || p.retryAfter == "" {
			t.Errorf("PUT over a bucket that does not exist: %d, Retry-After %q; want 503 with Retry-After", p.put, p.retryAfter)
		}
		if out := logs.String(); !strings.Contains(out, "NoSuchBucket") || !strings.Contains(out, "not ready") {
			t.Errorf("the log does not name the missing bucket for both the probe and the request:\n%s", out)
		}
	})

	t.Run("endpoint down", func(t *testing.T) {
		a := devtest.Start(t, adminPassword, []string{"--webdav-store", s3.URL("down")}, nil)
		if p := probeStore(t, a.APIURL, "before.txt"); p.ready != http.StatusOK || p.put != http.StatusCreated {
			t.Fatalf("with the store up: /readyz %d, PUT %d; want 200 and 201", p.ready, p.put)
		}
		// SIGKILL: the loopback port is closed, connections are refused.
		s3.Stop()
		if c, err := net.DialTimeout("tcp", strings.TrimPrefix(s3.Endpoint, "http://"), time.Second); err == nil {
			c.Close()
			t.Fatalf("the S3 endpoint %s still accepts connections after the stop", s3.Endpoint)
		}
		p := probeStore(t, a.APIURL, "during.txt")
		if p.ready == http.StatusOK {
			t.Errorf("/readyz answered 200 with the S3 endpoint down")
		}
		// A probe's own timeout is often 1 s; the SDK's retries over a
		// refused connection took /readyz's whole 5 s.
		if p.readyTook > 2*time.Second {
			t.Errorf("/readyz took %s with the S3 endpoint down; want an answer within 2s", p.readyTook)
		}
		if p.put != http.StatusServiceUnavailable || p.retryAfter == "" {
			t.Errorf("PUT with the S3 endpoint down: %d, Retry-After %q; want 503 with Retry-After", p.put, p.retryAfter)
		}
		s3.Restart()
		if p := probeStore(t, a.APIURL, "after.txt"); p.ready != http.StatusOK || p.put != http.StatusCreated {
			t.Errorf("with the store back: /readyz %d, PUT %d; want 200 and 201", p.ready, p.put)
		}
	})
}
