package webdav

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// A body of known length above one part streams into one PutObject: read
// back whole, and a client gone midway leaves the old contents and, after
// one sweep, no other object and no upload row.
func TestTreeModeStreamedUpload(t *testing.T) {
	eachTreeStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		addUser(t, db, "a", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		body := bytes.Repeat([]byte("0123456789abcdef"), (20<<20)/16+3)
		req, _ := http.NewRequest("PUT", e.base+"/whole.bin", bytes.NewReader(body))
		req.SetBasicAuth("a", testPass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT of %d bytes: %v %v", len(body), err, resp)
		}
		resp.Body.Close()
		if _, b := e.want(http.StatusOK, "a", "GET", "/whole.bin", ""); b != string(body) {
			t.Fatalf("read back %d bytes, not the %d sent", len(b), len(body))
		}

		e.want(http.StatusCreated, "a", "PUT", "/f.bin", "old contents")
		before := e.served.Load()
		pr, pw := io.Pipe()
		req, _ = http.NewRequest("PUT", e.base+"/f.bin", pr)
		req.SetBasicAuth("a", testPass)
		req.ContentLength = 32 << 20
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode < 400 {
					t.Errorf("a PUT cut short answered %d", resp.StatusCode)
				}
			}
		}()
		chunk := make([]byte, 1<<20)
		for i := 0; i < 12; i++ { // past one part's worth
			pw.Write(chunk)
		}
		pw.CloseWithError(fmt.Errorf("client gone"))
		<-done
		e.waitServed(before + 1)
		if _, b := e.want(http.StatusOK, "a", "GET", "/f.bin", ""); b != "old contents" {
			t.Fatalf("after an aborted PUT the file reads %.20q", b)
		}
		// The S3 server may store what arrived of the cut body after the
		// handler has deleted it (it notices the dropped connection on
		// its own time): then no row records the object and the sweep's
		// unrecorded pass removes it, on a later pass if the object
		// appears after one.
		var objs []contents.StoredObject
		for i := 0; i < 40; i++ {
			if _, err := SweepOnce(context.Background(), db, opts.Contents, SweepOptions{Grace: time.Nanosecond}); err != nil {
				t.Fatal(err)
			}
			if n := countRows(t, db, "SELECT COUNT(*) FROM dav_blobs WHERE state <> ?", blobLive); n != 0 {
				t.Fatalf("%d upload rows left", n)
			}
			var err error
			if objs, _, err = opts.Contents.Scan(context.Background(), "", 1000); err != nil {
				t.Fatal(err)
			}
			if len(objs) == 2 {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Fatalf("objects after 40 sweeps: %+v (want whole.bin's and f.bin's old contents)", objs)
	})
}

// A streamed body's own failure is the client's, not an S3 outage: the
// reader's error comes back as is (so the handler answers 4xx, not 503).
// What the S3 server kept of the cut request (versitygw stores the bytes
// that arrived) is the handler's to delete: TestTreeModeStreamedUpload.
func TestS3StreamKeepsBodyError(t *testing.T) {
	c := startTestS3(t).contents(t)
	gone := fmt.Errorf("client gone")
	r := io.MultiReader(bytes.NewReader(make([]byte, 9<<20)), &failReader{gone})
	_, err := c.Put(context.Background(), "k", r, 16<<20, contents.PutHooks{})
	if err != gone {
		t.Fatalf("Put of a failing body: %v, want the body's error", err)
	}
}

type failReader struct{ err error }

func (f *failReader) Read([]byte) (int, error) { return 0, f.err }
