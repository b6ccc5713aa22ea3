package webdav

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"gorm.io/gorm"
)

// migrate-store copies a POSIX tree into tree mode, where the handler
// serves it unchanged (contents, checksums, dead properties); a second run
// skips what is there; the reverse copy gives back the same files.
func TestMigrateStore(t *testing.T) {
	eachTreeStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		u := addUser(t, db, "mig", 0)
		posixDir := t.TempDir()
		pe := newEnv(t, db, posixDir, Options{ChecksumsInDB: true})
		pe.want(http.StatusCreated, "mig", "MKCOL", "/a", "")
		pe.want(http.StatusCreated, "mig", "MKCOL", "/a/b", "")
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB: multipart in S3
		pe.want(http.StatusCreated, "mig", "PUT", "/a/b/big.bin", string(big))
		for i := 0; i < 20; i++ {
			pe.want(http.StatusCreated, "mig", "PUT", fmt.Sprintf("/a/f%d.txt", i), fmt.Sprintf("file %d", i))
		}
		pe.want(http.StatusCreated, "mig", "PUT", "/empty", "")
		pe.want(http.StatusMultiStatus, "mig", "PROPPATCH", "/a/f3.txt", `<?xml version="1.0"?><propertyupdate xmlns="DAV:"><set><prop><color xmlns="urn:x">blue</color></prop></set></propertyupdate>`)
		want := pe.serverTree(u.ID, "/")

		ctx := context.Background()
		st, err := MigrateStore(ctx, db, MigrateOptions{Root: posixDir, Contents: opts.Contents, ToContents: true})
		if err != nil {
			t.Fatal(err)
		}
		if st.Files != 22 || st.Skipped != 0 {
			t.Fatalf("first run: %+v", st)
		}
		te := newEnv(t, db, t.TempDir(), opts)
		compareGot(t, "tree mode", te.serverTree(u.ID, "/"), want)
		_, pf := te.want(http.StatusMultiStatus, "mig", "PROPFIND", "/a/f3.txt", "", "Depth", "0")
		if !bytes.Contains([]byte(pf), []byte("blue")) {
			t.Fatalf("dead property lost: %s", pf)
		}
		if st, err = MigrateStore(ctx, db, MigrateOptions{Root: posixDir, Contents: opts.Contents, ToContents: true}); err != nil || st.Files != 0 || st.Skipped != 22 {
			t.Fatalf("second run: %+v %v", st, err)
		}
		back := t.TempDir()
		if st, err = MigrateStore(ctx, db, MigrateOptions{Root: back, Contents: opts.Contents}); err != nil || st.Files != 22 {
			t.Fatalf("reverse run: %+v %v", st, err)
		}
		compareTree(t, "back on disk", back+"/"+u.ID, want)
	})
}
