package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// nodeBackend keeps the tree as rows of dav_nodes (tree.go, the database
// every replica shares) and file contents as immutable objects of a
// contents.Store (S3, or a local directory), named by keys that never
// change once written. Renames, MOVE and listings are database work only;
// a PUT writes a new object and swaps the node's key in one transaction.
type nodeBackend struct {
	h     *Handler
	tree  *tree
	blobs *blobs
}

func (b *nodeBackend) kind() string { return "database+" + b.blobs.contents.Kind() }

func (b *nodeBackend) open(_ context.Context, userID string) (userTree, error) {
	return &nodeTree{b: b, h: b.h, userID: userID}, nil
}

// freeBytes: object storage publishes no free space; report a petabyte.
func (b *nodeBackend) freeBytes() int64 { return 1 << 50 }

// hashesEveryWrite: every body is hashed on its way into the store.
func (b *nodeBackend) hashesEveryWrite() bool { return true }

// sweepOnce makes nodeBackend sweeping (sweep.go).
func (b *nodeBackend) sweepOnce(ctx context.Context) (SweepStats, error) {
	return SweepOnce(ctx, b.h.db, b.blobs.contents, SweepOptions{Logger: b.h.log})
}

// nodeTree is one user's rows.
type nodeTree struct {
	b      *nodeBackend
	h      *Handler
	userID string
}

func (t *nodeTree) close() {}

func (t *nodeTree) stat(ctx context.Context, p string) (fs.FileInfo, error) {
	n, err := t.b.tree.lookup(ctx, t.h.db, t.userID, p)
	if err != nil {
		return nil, err
	}
	return nodeInfo{n}, nil
}

// lstat is stat: the tree has no links.
func (t *nodeTree) lstat(ctx context.Context, p string) (fs.FileInfo, error) { return t.stat(ctx, p) }

// etag is the node's id and version (nodeETag).
func (t *nodeTree) etag(_ context.Context, _ string, fi fs.FileInfo) string {
	return nodeETag(nodeOf(fi))
}

func (t *nodeTree) etagWith(fi fs.FileInfo, _ models.DavChecksum, _ bool) string {
	return nodeETag(nodeOf(fi))
}

// members reads the children by name, page rows at a time.
func (t *nodeTree) members(ctx context.Context, p string, dir fs.FileInfo, page int, fn func([]entry, any) error) error {
	id := nodeOf(dir).ID
	batch := make([]entry, 0, page)
	for after := ""; ; {
		ns, err := t.b.tree.list(ctx, t.userID, id, after, page)
		if err != nil {
			return err
		}
		batch = batch[:0]
		for i := range ns {
			batch = append(batch, entry{path: pathJoin(p, ns[i].Name), fi: nodeInfo{&ns[i]}})
		}
		if len(batch) > 0 {
			if err := fn(batch, nil); err != nil {
				return err
			}
		}
		if len(ns) < page {
			return nil
		}
		after = ns[len(ns)-1].Name
	}
}

// sums are the nodes' own columns; a tag needs none.
func (t *nodeTree) sums(_ context.Context, _ any, batch []entry, withSums, _ bool) (map[string]models.DavChecksum, error) {
	if !withSums {
		return nil, nil
	}
	return nodeSums(t.userID, batch), nil
}

func (t *nodeTree) fileBytes(ctx context.Context, _ string, fi fs.FileInfo) (int64, error) {
	switch {
	case fi == nil:
		return t.b.tree.usage(ctx, t.userID)
	case !fi.IsDir():
		return fi.Size(), nil
	}
	return subtreeSize(ctx, t.h.db, nodeOf(fi).ID)
}

// nodeOf is the row behind a tree-mode FileInfo.
func nodeOf(fi fs.FileInfo) *models.DavNode { return fi.(nodeInfo).n }

// nodeSums are the checksums of a batch's files, from their rows.
func nodeSums(userID string, batch []entry) map[string]models.DavChecksum {
	sums := make(map[string]models.DavChecksum, len(batch))
	for _, e := range batch {
		n := nodeOf(e.fi)
		if n.Dir || n.SHA1 == "" {
			continue
		}
		sums[e.path] = models.DavChecksum{UserID: userID, Path: e.path, Size: n.Size, MtimeNs: n.MtimeNs, SHA1: n.SHA1, MD5: n.MD5}
	}
	return sums
}

// ---- GET ----

// nodeContent reads the object the node named when it was looked up:
// objects never change once written.
type nodeContent struct {
	n  *models.DavNode
	br *blobReader
}

func (t *nodeTree) openFile(ctx context.Context, p string) (fileContent, error) {
	fi, err := t.stat(ctx, p)
	if err != nil {
		return nil, err
	}
	n := nodeOf(fi)
	return &nodeContent{n: n, br: &blobReader{ctx: ctx, c: t.b.blobs.contents, key: n.Blob, size: n.Size}}, nil
}

func (c *nodeContent) info() fs.FileInfo   { return nodeInfo{c.n} }
func (c *nodeContent) etag() string        { return nodeETag(c.n) }
func (c *nodeContent) body() io.ReadSeeker { return c.br }
func (c *nodeContent) close()              { c.br.Close() }

// prepare sizes the store's reads by the request's ranges and opens the
// first before the status line goes out, so an unreachable store answers
// 503 rather than a truncated 200.
func (c *nodeContent) prepare(r *http.Request) error {
	spans, satisfiable := requestedSpans(r.Header.Get("Range"), c.n.Size)
	c.br.spans = spans
	if r.Method != http.MethodGet || c.n.Size == 0 || !satisfiable || r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
		return nil
	}
	first := int64(0)
	if len(spans) > 0 {
		first = spans[0].off
	}
	err := c.br.open(first)
	if errors.Is(err, contents.ErrNoObject) {
		return errReplaced
	}
	return err
}

// writer: over TLS the server's connection has no ReadFrom worth calling
// (net/http would copy through 32 KiB): copy with our buffer.
func (c *nodeContent) writer(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	return bigCopyWriter{ResponseWriter: w, splice: r.TLS == nil}
}

func (t *nodeTree) readRange(ctx context.Context, _ string, fi fs.FileInfo, off, n int64) (io.ReadCloser, error) {
	nd := nodeOf(fi)
	if nd.Blob == "" || n == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	return t.b.blobs.contents.Get(ctx, nd.Blob, off, n)
}

// ---- MKCOL, LOCK of an unmapped URL ----

func (t *nodeTree) mkcol(ctx context.Context, p string, parent fs.FileInfo) error {
	now := time.Now().UnixNano()
	n := &models.DavNode{UserID: t.userID, ParentID: nodeOf(parent).ID, Name: pathBase(p), Dir: true, MtimeNs: now, CreatedNs: now, Version: 1}
	err := t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := createNodeTx(tx, n); err != nil {
			return err
		}
		return t.h.meta.dropTx(tx, t.userID, p)
	})
	if err != nil && !errors.Is(err, errExists) {
		return fmt.Errorf("mkcol: %w", err)
	}
	return err
}

func (t *nodeTree) createEmpty(ctx context.Context, p string) (bool, error) {
	pfi, err := t.stat(ctx, pathParent(p))
	if err != nil || !pfi.IsDir() {
		return false, fmt.Errorf("parent collection: %w", fs.ErrNotExist)
	}
	now := time.Now().UnixNano()
	n := &models.DavNode{UserID: t.userID, ParentID: nodeOf(pfi).ID, Name: pathBase(p), MtimeNs: now, CreatedNs: now, Version: 1,
		MD5: emptyMD5, SHA1: emptySHA1, SHA256: emptySHA256}
	err = t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := createNodeTx(tx, n); err != nil {
			return err
		}
		return t.h.meta.dropTx(tx, t.userID, p)
	})
	if errors.Is(err, errExists) {
		return false, nil
	}
	return err == nil, err
}

// The digests of no bytes.
const (
	emptyMD5    = "d41d8cd98f00b204e9800998ecf8427e"
	emptySHA1   = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// setMtimeTx sets the row's time: nothing outside the transaction.
func (t *nodeTree) setMtimeTx(tx *gorm.DB, _ string, fi fs.FileInfo, mtime time.Time) (func() error, error) {
	return nil, setNodeMtimeTx(tx, nodeOf(fi).ID, mtime)
}

// ---- DELETE ----

// remove deletes the rows in one transaction with the properties and
// locks; the objects go with the sweep (a single file's at once).
func (t *nodeTree) remove(ctx context.Context, p string, fi fs.FileInfo) ([]deleteFailure, error) {
	n := nodeOf(fi)
	err := t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := deleteSubtree(tx, n.ID); err != nil {
			return err
		}
		if err := touchDir(tx, n.ParentID); err != nil {
			return err
		}
		if err := t.h.meta.dropTx(tx, t.userID, p); err != nil {
			return err
		}
		return dropLocks(tx, t.userID, p)
	})
	if err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	t.h.locksChanged()
	t.h.quota.invalidate(t.userID)
	if !n.Dir {
		t.reclaimLater(ctx, n.Blob)
	}
	return nil, nil
}

// reclaimLater deletes a blob the request stopped referencing, after the
// answer; a failure is left to the sweep.
func (t *nodeTree) reclaimLater(ctx context.Context, key string) {
	if key == "" {
		return
	}
	b, ctx := t.b.blobs, context.WithoutCancel(ctx)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := b.reclaim(ctx, key); err != nil {
			b.log.Warn("webdav: reclaim replaced contents (the sweep will retry)", "key", key, "err", err)
		}
	}()
}
