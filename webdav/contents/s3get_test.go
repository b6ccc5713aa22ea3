package contents

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// In S3 mode over plain HTTP a GET's body is a rawBody on a connection of
// our own (what lets the handler splice it to the client), read whole it
// gives its connection back for the next GET, and error answers, closing
// servers and cancelled requests behave as through net/http.
func TestRawGetClient(t *testing.T) {
	obj := make([]byte, 3<<20)
	rand.Read(obj)
	var conns atomic.Int64
	block := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/obj":
			http.ServeContent(w, r, "obj", time.Time{}, bytes.NewReader(obj))
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write(obj[:100])
		case "/stall":
			w.Header().Set("Content-Length", "1000")
			w.Write(obj[:10])
			w.(http.Flusher).Flush()
			<-block
		default:
			http.Error(w, "<Error><Code>NoSuchKey</Code></Error>", http.StatusNotFound)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	defer close(block)
	c := newRawGetClient(srv.Client())
	get := func(ctx context.Context, path string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp
	}
	ctx := context.Background()

	resp := get(ctx, "/obj")
	if _, ok := resp.Body.(*rawBody); !ok {
		t.Fatalf("a 200 with a length over plain HTTP: body %T, want *rawBody", resp.Body)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(b, obj) {
		t.Fatalf("read %d bytes, err %v", len(b), err)
	}
	// A range, sent through SendTo (a bytes.Buffer has ReadFrom).
	resp = get(ctx, "/obj", "Range", "bytes=100-2000099")
	var buf bytes.Buffer
	n, err := resp.Body.(Sender).SendTo(&buf, 1<<30)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || err != nil || n != 2000000 || !bytes.Equal(buf.Bytes(), obj[100:2000100]) {
		t.Fatalf("range: status %d, %d bytes, err %v", resp.StatusCode, n, err)
	}
	if got := conns.Load(); got != 1 {
		t.Fatalf("%d connections for GETs read whole, want 1 reused", got)
	}

	// An error answer reads as one; its connection is not kept.
	resp = get(ctx, "/missing")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "NoSuchKey") {
		t.Fatalf("missing: %d %q", resp.StatusCode, b)
	}
	// "Connection: close": the body is read, the connection not kept.
	resp = get(ctx, "/close")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(b, obj[:100]) {
		t.Fatalf("closing server: %d bytes", len(b))
	}
	before := conns.Load()
	resp = get(ctx, "/obj", "Range", "bytes=0-9")
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if conns.Load() != before+1 {
		t.Fatalf("a connection the server closed was reused")
	}

	// A body cut short is an error, not a short success.
	cctx, cancel := context.WithCancel(ctx)
	resp = get(cctx, "/stall")
	b = make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, b); err != nil {
		t.Fatal(err)
	}
	cancel() // unblocks the read below
	if _, err := io.ReadAll(resp.Body); err == nil || !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("cancelled body: err %v", err)
	}
	resp.Body.Close()
}
