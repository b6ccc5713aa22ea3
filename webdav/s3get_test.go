package webdav

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"mime"
	mimepart "mime/multipart"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// recordingContents records the spans GET asks its contents.Store for.
type recordingContents struct {
	contents.Store
	mu   sync.Mutex
	gets []span
}

func (r *recordingContents) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	r.mu.Lock()
	r.gets = append(r.gets, span{off, n})
	r.mu.Unlock()
	return r.Store.Get(ctx, key, off, n)
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
		rec := &recordingContents{Store: opts.Contents}
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
