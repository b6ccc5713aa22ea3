package webdav

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime"
	mimepart "mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
)

// recordingContents records the spans GET asks its Contents for.
type recordingContents struct {
	Contents
	mu   sync.Mutex
	gets []span
}

func (r *recordingContents) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	r.mu.Lock()
	r.gets = append(r.gets, span{off, n})
	r.mu.Unlock()
	return r.Contents.Get(ctx, key, off, n)
}

// take returns the spans asked for since the last take.
func (r *recordingContents) take() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.gets
	r.gets = nil
	return g
}

// In tree mode GET answers ranges, conditions and HEAD as POSIX mode
// does (http.ServeContent), and asks the store for the requested bytes
// only: a bounded range is one ranged read of its length, not a read to
// the end of the object abandoned after the range.
func TestTreeModeRangedGets(t *testing.T) {
	eachTreeStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		rec := &recordingContents{Contents: opts.Contents}
		opts.Contents = rec
		addUser(t, db, "rng", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		const size = 100000
		data := make([]byte, size)
		rand.Read(data)
		h, _ := e.want(http.StatusCreated, "rng", "PUT", "/f.bin", string(data))
		etag := h.Get("ETag")
		rec.take()

		_, body := e.want(http.StatusOK, "rng", "GET", "/f.bin", "")
		if body != string(data) {
			t.Fatalf("GET: %d bytes, not the %d put", len(body), size)
		}
		wantGets(t, rec, "whole file", span{0, -1})

		for _, c := range []struct {
			rng      string
			off, n   int64
			contents string
		}{
			{"bytes=10-19", 10, 10, "bytes 10-19/100000"},
			{"bytes=99990-", 99990, 10, "bytes 99990-99999/100000"},
			{"bytes=-5", 99995, 5, "bytes 99995-99999/100000"},
			{"bytes=99995-200000", 99995, 5, "bytes 99995-99999/100000"},
		} {
			h, part := e.want(http.StatusPartialContent, "rng", "GET", "/f.bin", "", "Range", c.rng)
			if part != string(data[c.off:c.off+c.n]) || h.Get("Content-Range") != c.contents {
				t.Fatalf("Range %s: %d bytes, Content-Range %q", c.rng, len(part), h.Get("Content-Range"))
			}
			want := span{c.off, c.n}
			if c.off+c.n == size {
				want.n = -1 // to the end: no bound to send
			}
			wantGets(t, rec, c.rng, want)
		}

		// Two ranges: multipart/byteranges, one bounded read each.
		h, multi := e.want(http.StatusPartialContent, "rng", "GET", "/f.bin", "", "Range", "bytes=0-1,1000-1002")
		if got := byteranges(t, h.Get("Content-Type"), multi); !slices.Equal(got, []string{
			"bytes 0-1/100000", string(data[0:2]), "bytes 1000-1002/100000", string(data[1000:1003]),
		}) {
			t.Fatalf("two ranges: %q", got)
		}
		wantGets(t, rec, "two ranges", span{0, 2}, span{1000, 3})

		// Past the end, or malformed: 416 before any read.
		h, _ = e.want(http.StatusRequestedRangeNotSatisfiable, "rng", "GET", "/f.bin", "", "Range", "bytes=100000-")
		if h.Get("Content-Range") != "bytes */100000" {
			t.Fatalf("416 Content-Range %q", h.Get("Content-Range"))
		}
		e.want(http.StatusRequestedRangeNotSatisfiable, "rng", "GET", "/f.bin", "", "Range", "bytes=5-2")
		wantGets(t, rec, "unsatisfiable ranges")
		// Ranges adding up to more than the file: the whole file.
		_, body = e.want(http.StatusOK, "rng", "GET", "/f.bin", "", "Range", "bytes=0-,0-")
		if body != string(data) {
			t.Fatalf("overlapping ranges: %d bytes", len(body))
		}
		rec.take()

		// If-Range: the range while the ETag matches, else the whole file.
		_, part := e.want(http.StatusPartialContent, "rng", "GET", "/f.bin", "", "Range", "bytes=5-9", "If-Range", etag)
		if part != string(data[5:10]) {
			t.Fatalf("If-Range matching: %q", part)
		}
		_, body = e.want(http.StatusOK, "rng", "GET", "/f.bin", "", "Range", "bytes=5-9", "If-Range", `"other"`)
		if body != string(data) {
			t.Fatalf("If-Range not matching: %d bytes", len(body))
		}
		rec.take()

		// Conditions and HEAD read nothing.
		e.want(http.StatusNotModified, "rng", "GET", "/f.bin", "", "If-None-Match", etag)
		e.want(http.StatusNotModified, "rng", "GET", "/f.bin", "", "If-Modified-Since", h.Get("Date"))
		hh, hb := e.want(http.StatusOK, "rng", "HEAD", "/f.bin", "")
		if hb != "" || hh.Get("Content-Length") != fmt.Sprint(size) || hh.Get("ETag") != etag || hh.Get("Accept-Ranges") != "bytes" {
			t.Fatalf("HEAD: %v, %d body bytes", hh, len(hb))
		}
		wantGets(t, rec, "conditions and HEAD")
		e.want(http.StatusPreconditionFailed, "rng", "GET", "/f.bin", "", "If-Match", `"other"`)
		_, body = e.want(http.StatusOK, "rng", "GET", "/f.bin", "", "If-Match", etag)
		if body != string(data) {
			t.Fatalf("If-Match: %d bytes", len(body))
		}
	})
}

// byteranges reads a multipart/byteranges body: each part's
// Content-Range, then its bytes.
func byteranges(t *testing.T, ctype, body string) []string {
	t.Helper()
	_, params, err := mime.ParseMediaType(ctype)
	if err != nil || !strings.HasPrefix(ctype, "multipart/byteranges") {
		t.Fatalf("Content-Type %q: %v", ctype, err)
	}
	var out []string
	mr := mimepart.NewReader(strings.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		out = append(out, p.Header.Get("Content-Range"), string(b))
	}
}

// wantGets fails unless the store was asked for exactly want since the
// last take.
func wantGets(t *testing.T, rec *recordingContents, what string, want ...span) {
	t.Helper()
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("%s: store reads %v, want %v", what, got, want)
	}
}

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
	// A range, sent through sendTo (a bytes.Buffer has ReadFrom).
	resp = get(ctx, "/obj", "Range", "bytes=100-2000099")
	var buf bytes.Buffer
	n, err := resp.Body.(bodySender).sendTo(&buf, 1<<30)
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
