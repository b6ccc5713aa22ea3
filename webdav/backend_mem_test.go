package webdav

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// memBackend is a third storage backend that exists only in this test:
// every user's tree in a map, kept in memory. It plugs in with one
// registration (Options.backend, as the test-only kind plugs into app)
// and the protocol runs over it unchanged (TestLitmus's "memory" run,
// TestMemBackendThroughTheProtocol), which is what shows the seam
// (backend.go) is the whole of what a storage must provide. Properties
// and locks stay in the database, as for every backend.
type memBackend struct {
	h     *Handler
	mu    sync.Mutex
	users map[string]map[string]*memNode // user -> path -> node
	ids   int64
}

func newMemBackend(h *Handler) backend {
	return &memBackend{h: h, users: map[string]map[string]*memNode{}}
}

// memNode is one file or collection; a write replaces the node.
type memNode struct {
	id, version int64
	name        string
	dir         bool
	data        []byte
	mtime       time.Time
	md5, sha1   string
}

func (n *memNode) Name() string       { return n.name }
func (n *memNode) Size() int64        { return int64(len(n.data)) }
func (n *memNode) ModTime() time.Time { return n.mtime }
func (n *memNode) IsDir() bool        { return n.dir }
func (n *memNode) Sys() any           { return nil }
func (n *memNode) Mode() fs.FileMode {
	if n.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

func (b *memBackend) kind() string           { return "memory (test only)" }
func (b *memBackend) freeBytes() int64       { return 1 << 40 }
func (b *memBackend) hashesEveryWrite() bool { return true }

func (b *memBackend) recent(context.Context, string, int) ([]FileInfo, error) { return nil, nil }

func (b *memBackend) open(_ context.Context, userID string) (userTree, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users[userID] == nil {
		b.ids++
		b.users[userID] = map[string]*memNode{"/": {id: b.ids, version: 1, name: "/", dir: true, mtime: time.Now()}}
	}
	return &memTree{b: b, userID: userID}, nil
}

type memTree struct {
	b      *memBackend
	userID string
}

func (t *memTree) nodes() map[string]*memNode { return t.b.users[t.userID] }

func (t *memTree) close() {}

func (t *memTree) stat(_ context.Context, p string) (fs.FileInfo, error) {
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	if n := t.nodes()[p]; n != nil {
		return n, nil
	}
	return nil, fs.ErrNotExist
}

func (t *memTree) lstat(ctx context.Context, p string) (fs.FileInfo, error) { return t.stat(ctx, p) }

func (t *memTree) etag(_ context.Context, _ string, fi fs.FileInfo) string {
	return t.etagWith(fi, models.DavChecksum{}, false)
}

func (t *memTree) etagWith(fi fs.FileInfo, _ models.DavChecksum, _ bool) string {
	n := fi.(*memNode)
	return fmt.Sprintf(`"m%d-%d"`, n.id, n.version)
}

// below lists the paths strictly below p (members only if direct).
func (t *memTree) below(p string, direct bool) []string {
	var out []string
	for q := range t.nodes() {
		if q == p || !isUnder(q, p) || (direct && pathParent(q) != p) {
			continue
		}
		out = append(out, q)
	}
	sort.Strings(out)
	return out
}

func (t *memTree) members(_ context.Context, p string, _ fs.FileInfo, page int, fn func([]entry, any) error) error {
	t.b.mu.Lock()
	var batch []entry
	for _, q := range t.below(p, true) {
		batch = append(batch, entry{path: q, fi: t.nodes()[q]})
	}
	t.b.mu.Unlock()
	for len(batch) > 0 {
		k := min(page, len(batch))
		if err := fn(batch[:k], nil); err != nil {
			return err
		}
		batch = batch[k:]
	}
	return nil
}

func (t *memTree) sums(_ context.Context, _ any, batch []entry, withSums, _ bool) (map[string]models.DavChecksum, error) {
	if !withSums {
		return nil, nil
	}
	out := map[string]models.DavChecksum{}
	for _, e := range batch {
		if n := e.fi.(*memNode); !n.dir {
			out[e.path] = models.DavChecksum{UserID: t.userID, Path: e.path, Size: n.Size(), MtimeNs: n.mtime.UnixNano(), SHA1: n.sha1, MD5: n.md5}
		}
	}
	return out, nil
}

func (t *memTree) fileBytes(_ context.Context, p string, _ fs.FileInfo) (int64, error) {
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	var n int64
	for _, q := range append(t.below(p, false), p) {
		if nd := t.nodes()[q]; nd != nil {
			n += nd.Size()
		}
	}
	return n, nil
}

// memContent serves a node's bytes; a node is never changed in place.
type memContent struct {
	t *memTree
	n *memNode
	r *bytes.Reader
}

func (t *memTree) openFile(ctx context.Context, p string) (fileContent, error) {
	fi, err := t.stat(ctx, p)
	if err != nil {
		return nil, err
	}
	n := fi.(*memNode)
	return &memContent{t: t, n: n, r: bytes.NewReader(n.data)}, nil
}

func (c *memContent) info() fs.FileInfo           { return c.n }
func (c *memContent) etag() string                { return c.t.etagWith(c.n, models.DavChecksum{}, false) }
func (c *memContent) body() io.ReadSeeker         { return c.r }
func (c *memContent) prepare(*http.Request) error { return nil }
func (c *memContent) close()                      {}
func (c *memContent) writer(w http.ResponseWriter, _ *http.Request) http.ResponseWriter {
	return w
}

func (t *memTree) readRange(_ context.Context, _ string, fi fs.FileInfo, off, n int64) (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(bytes.NewReader(fi.(*memNode).data), off, n)), nil
}

// add creates a node at p, its parent a collection; errExists when taken.
func (t *memTree) add(p string, n *memNode) error {
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	if par := t.nodes()[pathParent(p)]; par == nil || !par.dir {
		return errParentMoved
	}
	if t.nodes()[p] != nil {
		return errExists
	}
	t.b.ids++
	n.id, n.version, n.name = t.b.ids, 1, pathBase(p)
	t.nodes()[p] = n
	return nil
}

// metaTx runs the metadata changes that follow a tree change.
func (t *memTree) metaTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	err := t.b.h.db.WithContext(ctx).Transaction(fn)
	t.b.h.locksChanged()
	t.b.h.quota.invalidate(t.userID)
	return err
}

func (t *memTree) mkcol(ctx context.Context, p string, _ fs.FileInfo) error {
	if err := t.add(p, &memNode{dir: true, mtime: time.Now()}); err != nil {
		return err
	}
	return t.metaTx(ctx, func(tx *gorm.DB) error { return t.b.h.meta.dropTx(tx, t.userID, p) })
}

func (t *memTree) createEmpty(ctx context.Context, p string) (bool, error) {
	err := t.add(p, &memNode{mtime: time.Now(), md5: emptyMD5, sha1: emptySHA1})
	if errors.Is(err, errExists) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, t.metaTx(ctx, func(tx *gorm.DB) error { return t.b.h.meta.dropTx(tx, t.userID, p) })
}

func (t *memTree) setMtimeTx(_ *gorm.DB, p string, fi fs.FileInfo, mtime time.Time) (func() error, error) {
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	old := fi.(*memNode).mtime
	if n := t.nodes()[p]; n != nil {
		n.mtime = mtime
	}
	return func() error {
		t.b.mu.Lock()
		defer t.b.mu.Unlock()
		if n := t.nodes()[p]; n != nil {
			n.mtime = old
		}
		return nil
	}, nil
}

func (t *memTree) remove(ctx context.Context, p string, _ fs.FileInfo) ([]deleteFailure, error) {
	t.b.mu.Lock()
	for _, q := range append(t.below(p, false), p) {
		delete(t.nodes(), q)
	}
	t.b.mu.Unlock()
	return nil, t.metaTx(ctx, func(tx *gorm.DB) error {
		if err := t.b.h.meta.dropTx(tx, t.userID, p); err != nil {
			return err
		}
		return dropLocks(tx, t.userID, p)
	})
}

func (t *memTree) copyMove(ctx context.Context, op copyMove) error {
	t.b.mu.Lock()
	moved := map[string]*memNode{}
	for _, q := range append(t.below(op.src, false), op.src) {
		if op.move || op.infinite || q == op.src {
			moved[op.dst+strings.TrimPrefix(q, op.src)] = t.nodes()[q]
		}
	}
	for _, q := range append(t.below(op.dst, false), op.dst) {
		delete(t.nodes(), q)
	}
	for q, n := range moved {
		if op.move {
			delete(t.nodes(), op.src+strings.TrimPrefix(q, op.dst))
			n.name = pathBase(q)
		} else {
			c := *n
			t.b.ids++
			c.id, c.version, c.name = t.b.ids, 1, pathBase(q)
			n = &c
		}
		t.nodes()[q] = n
	}
	t.b.mu.Unlock()
	meta := t.b.h.meta
	err := t.metaTx(ctx, func(tx *gorm.DB) error {
		if op.dfi != nil && !op.replace {
			if err := dropLocksBelow(tx, t.userID, op.dst); err != nil {
				return err
			}
		}
		if err := meta.dropTx(tx, t.userID, op.dst); err != nil {
			return err
		}
		if op.move {
			if err := meta.moveTx(tx, t.userID, op.src, op.dst); err != nil {
				return err
			}
			return dropLocks(tx, t.userID, op.src)
		}
		return meta.copyTx(tx, t.userID, op.src, op.dst, op.infinite)
	})
	meta.propsWritten()
	return err
}

// memPut receives the body into memory; commit swaps the node.
type memPut struct {
	t    *memTree
	p    string
	old  *memNode
	data []byte
	node *memNode
}

func (t *memTree) putTarget(ctx context.Context, p string) (putTarget, error) {
	par, err := t.stat(ctx, pathParent(p))
	if err != nil || !par.IsDir() {
		return nil, fmt.Errorf("%w: %v", errNoParent, err)
	}
	mp := &memPut{t: t, p: p}
	if fi, err := t.stat(ctx, p); err == nil {
		mp.old = fi.(*memNode)
	}
	return mp, nil
}

func (mp *memPut) existing() (fs.FileInfo, bool) {
	if mp.old == nil {
		return nil, false
	}
	return mp.old, true
}

func (mp *memPut) receive(u *upload) error {
	hr := newHashReader(&limitedReader{r: u.rq.r.Body, left: u.limit, err: u.limitErr}, u.rq.r.ContentLength)
	defer hr.close()
	var buf bytes.Buffer
	n, err := io.Copy(&buf, hr)
	u.n, mp.data = n, buf.Bytes()
	u.md5sum, u.sha1sum, _ = hr.sums()
	return u.received(err, hr.readErr != nil)
}

func (mp *memPut) commit(u *upload) error {
	mtime := time.Now()
	if t, ok := parseMtime(u.rq.r.Header.Get("X-OC-Mtime")); ok {
		mtime, u.mtimeOK = t, true
	}
	n := &memNode{data: mp.data, mtime: mtime, md5: u.md5sum, sha1: u.sha1sum}
	t := mp.t
	t.b.mu.Lock()
	if par := t.nodes()[pathParent(mp.p)]; par == nil || !par.dir {
		t.b.mu.Unlock()
		return refusal(http.StatusConflict, errParentMoved.Error())
	}
	t.b.ids++
	n.id, n.version, n.name = t.b.ids, 1, pathBase(mp.p)
	t.nodes()[mp.p] = n
	t.b.mu.Unlock()
	mp.node, u.done = n, true
	if !u.admitted {
		t.b.h.quota.add(t.userID, u.n-u.oldSize)
	}
	if mp.old != nil {
		return nil
	}
	// A new file must not inherit the properties of a deleted one.
	return t.b.h.db.WithContext(u.rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		return t.b.h.meta.dropPropsTx(tx, t.userID, mp.p)
	})
}

func (mp *memPut) etag(*upload) string { return mp.t.etagWith(mp.node, models.DavChecksum{}, false) }
func (mp *memPut) cleanup(*upload)     {}

// TestMemBackendThroughTheProtocol: what litmus does not reach also runs
// over the test-only backend unchanged — the quota (admission and RFC
// 4331 values through fileBytes and freeBytes), the package's API for
// other packages (Stat, Open, ReadDir) and a conditional GET.
func TestMemBackendThroughTheProtocol(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		u := addUser(t, db, "mem", 10)
		e := newEnv(t, db, t.TempDir(), Options{backend: newMemBackend})
		e.want(http.StatusCreated, "mem", "MKCOL", "/d", "")
		hdr, _ := e.want(http.StatusCreated, "mem", "PUT", "/d/a.txt", "0123456789")
		tag := hdr.Get("ETag")
		e.want(http.StatusInsufficientStorage, "mem", "PUT", "/d/b.txt", "x")
		e.want(http.StatusNotModified, "mem", "GET", "/d/a.txt", "", "If-None-Match", tag)
		_, body := e.want(http.StatusMultiStatus, "mem", "PROPFIND", "/", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/></D:prop></D:propfind>`, "Depth", "0")
		if !strings.Contains(body, ">10</") {
			t.Fatalf("quota-used-bytes should be 10: %s", body)
		}
		ctx := context.Background()
		fi, err := e.h.Stat(ctx, u.ID, "/d/a.txt")
		if err != nil || fi.ETag != tag || fi.Size != 10 || fi.SHA1 != "87acec17cd9dcd20a716cc2cf67417b71c8a7016" {
			t.Fatalf("Stat: %+v, %v; want the PUT's tag %s, 10 bytes and the SHA-1", fi, err, tag)
		}
		rc, _, err := e.h.Open(ctx, u.ID, "/d/a.txt", 2, 3)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != "234" {
			t.Fatalf("Open(2, 3) read %q", got)
		}
		list, err := e.h.ReadDir(ctx, u.ID, "/d")
		if err != nil || len(list) != 1 || list[0].Path != "/d/a.txt" || list[0].ETag != tag {
			t.Fatalf("ReadDir: %+v, %v", list, err)
		}
		e.want(http.StatusNoContent, "mem", "DELETE", "/d", "")
		e.want(http.StatusCreated, "mem", "PUT", "/b.txt", "x")
	})
}
