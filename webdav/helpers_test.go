package webdav

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// env is a running handler on a loopback port with one or more users.
type env struct {
	t    *testing.T
	db   *gorm.DB
	dir  string
	h    *Handler
	srv  *httptest.Server
	base string // server URL + "/webdav"
	// served counts requests whose handler has returned: a client that
	// gives up mid-request returns before the server is done with it.
	served *atomic.Int64
}

const testPass = "correct-horse-battery"

func newEnv(t *testing.T, db *gorm.DB, dir string, opts Options) *env {
	t.Helper()
	opts.Root = dir
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h, err := New(db, auth.NewService(db, auth.Options{}), opts)
	if err != nil {
		t.Fatalf("new handler: %v", err)
	}
	served := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer served.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, db: db, dir: dir, h: h, srv: srv, base: srv.URL + "/webdav", served: served}
}

// waitServed waits until the server has finished n requests.
func (e *env) waitServed(n int64) {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); e.served.Load() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("the server finished %d requests, not %d, within 30 s", e.served.Load(), n)
		}
	}
}

// addUser creates a service user with testPass.
func addUser(t *testing.T, db *gorm.DB, name string, quota int64) *models.User {
	t.Helper()
	hash, err := auth.HashPassword(testPass)
	if err != nil {
		t.Fatalf("hash password: %v", err)
	}
	u := &models.User{ID: uuid.NewString(), Username: name, PasswordHash: hash, Clearance: "public", QuotaBytes: quota}
	if err := db.WithContext(context.Background()).Create(u).Error; err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	return u
}

// do sends a request as user and returns status, headers and body.
func (e *env) do(user, method, path string, body string, hdr ...string) (int, http.Header, string) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	url := path
	if !strings.HasPrefix(path, "http") {
		url = e.base + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	if user != "" {
		req.SetBasicAuth(user, testPass)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("read body of %s %s: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// want fails unless the request answers status.
func (e *env) want(status int, user, method, path, body string, hdr ...string) (http.Header, string) {
	e.t.Helper()
	got, h, b := e.do(user, method, path, body, hdr...)
	if got != status {
		e.t.Fatalf("%s %s: status %d, want %d; body: %.400s", method, path, got, status, b)
	}
	return h, b
}

// lockedWriter serialises writes to a shared buffer.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newTestLogger(w io.Writer, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu: mu, w: w}, nil))
}

// eachStore runs fn on each database and with each checksum store: the
// extended-attribute store (asserted to be in use, as it is on the ext4
// these tests run on) and the database store.
func eachStore(t *testing.T, fn func(t *testing.T, db *gorm.DB, opts Options)) {
	t.Run("xattr", func(t *testing.T) {
		if !xattrsWork(t.TempDir()) {
			t.Fatal("the test directory's filesystem keeps no user extended attributes; the attribute store cannot be tested here")
		}
		testdb.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, db, Options{}) })
	})
	t.Run("database", func(t *testing.T) {
		testdb.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, db, Options{ChecksumsInDB: true}) })
	})
}

// sumsOnFiles reports whether h chose the extended-attribute store.
func sumsOnFiles(h *Handler) bool {
	_, ok := h.meta.(*xattrStore)
	return ok
}
