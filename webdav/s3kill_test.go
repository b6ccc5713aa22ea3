package webdav

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// S3 dies during an upload and during a download: the clients get 5xx
// (503 with Retry-After where the answer is not under way yet), the old
// contents stay the visible ones, and once S3 is back the service resumes
// and one sweep leaves no trace of the interrupted upload.
func TestS3ServerKilled(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		s := startTestS3(t)
		opts := Options{Contents: s.contents(t)}
		addUser(t, db, "k", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		old := bytes.Repeat([]byte("old "), 5<<20) // 20 MiB
		e.want(http.StatusCreated, "k", "PUT", "/f.bin", string(old))

		// A download under way when S3 dies ends short (the status line
		// was out); a new one gets 503.
		req, _ := http.NewRequest("GET", e.base+"/f.bin", nil)
		req.SetBasicAuth("k", testPass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 1<<10)
		io.ReadFull(resp.Body, head)

		// An upload under way when S3 dies.
		pw, done := e.slowPut("k", "/f.bin")
		chunk := bytes.Repeat([]byte("new "), 1<<18)
		for i := 0; i < 10; i++ { // 10 MiB: past the first part
			pw.Write(chunk)
		}
		s.Stop()
		go func() {
			for i := 0; i < 10; i++ {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
			}
			pw.Close()
		}()
		if got := <-done; got < 500 {
			t.Fatalf("PUT while S3 is down answered %d, want 5xx", got)
		}
		rest, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(head)+len(rest) >= len(old) {
			t.Fatalf("a download cut by S3's death delivered all %d bytes", len(head)+len(rest))
		}
		st, hdr, _ := e.do("k", "GET", "/f.bin", "")
		if st != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
			t.Fatalf("GET while S3 is down: %d, Retry-After %q; want 503 with Retry-After", st, hdr.Get("Retry-After"))
		}
		st, hdr, _ = e.do("k", "PUT", "/g.txt", "small")
		if st != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
			t.Fatalf("PUT while S3 is down: %d; want 503 with Retry-After", st)
		}
		// Listings need no S3.
		e.want(http.StatusMultiStatus, "k", "PROPFIND", "/", "", "Depth", "1")

		s.Restart(t)
		if _, b := e.want(http.StatusOK, "k", "GET", "/f.bin", ""); b != string(old) {
			t.Fatal("after S3's return the file is not the old contents")
		}
		e.want(http.StatusNotFound, "k", "GET", "/g.txt", "")
		e.want(http.StatusCreated, "k", "PUT", "/g.txt", "small")
		time.Sleep(50 * time.Millisecond)
		if _, err := SweepOnce(context.Background(), db, opts.Contents, SweepOptions{Grace: time.Nanosecond}); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, db, "SELECT COUNT(*) FROM dav_blobs WHERE state <> ?", blobLive); n != 0 {
			t.Fatalf("%d unfinished blob rows after the sweep", n)
		}
		objs, _, err := opts.Contents.Scan(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		uploads, _, err := opts.Contents.Scan(context.Background(), "u:", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 2 || len(uploads) != 0 {
			t.Fatalf("after the sweep: objects %+v, multipart uploads %+v; want f.bin's and g.txt's only", objs, uploads)
		}
	})
}
