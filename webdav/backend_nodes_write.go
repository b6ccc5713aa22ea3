package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// ---- COPY / MOVE ----

// COPY and MOVE are database work only, in one transaction each: a MOVE
// rewrites the moved node's parent and name (one row however much lies
// below); a COPY inserts new nodes that share the source's immutable
// objects (no byte is copied in S3; blobs.go orders a COPY against a
// concurrent reclaim of those objects).
func (t *nodeTree) copyMove(ctx context.Context, op copyMove) error {
	var dnode *models.DavNode
	if op.dfi != nil {
		dnode = nodeOf(op.dfi)
	}
	var err error
	for attempt := 0; ; attempt++ {
		err = t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return t.copyMoveTx(ctx, tx, op, dnode)
		})
		if !errors.Is(err, errShareLost) || attempt == 2 {
			break
		}
	}
	t.h.locksChanged()
	t.h.quota.invalidate(t.userID)
	if !op.move {
		t.h.meta.propsWritten()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errParentMoved):
		return refusal(http.StatusConflict, "the source or destination changed during the request")
	case errors.Is(err, errExists):
		return refusal(http.StatusPreconditionFailed, "destination exists")
	case err != nil:
		return err
	}
	if dnode != nil && !dnode.Dir {
		t.reclaimLater(ctx, dnode.Blob)
	}
	return nil
}

// errShareLost: a blob the COPY would share was reclaimed meanwhile.
var errShareLost = errors.New("a shared object was reclaimed during the copy")

func (t *nodeTree) copyMoveTx(ctx context.Context, tx *gorm.DB, op copyMove, dnode *models.DavNode) error {
	uid, meta, dst := t.userID, t.h.meta, op.dst
	if dnode != nil {
		if err := deleteSubtree(tx, dnode.ID); err != nil {
			return err
		}
		if !op.replace {
			// Locks rooted at dst stay and cover what replaces it.
			if err := dropLocksBelow(tx, uid, dst); err != nil {
				return err
			}
		}
	}
	if err := meta.dropTx(tx, uid, dst); err != nil {
		return err
	}
	dparent, err := t.b.tree.lookup(ctx, tx, uid, pathParent(dst))
	if err != nil || !dparent.Dir {
		return errParentMoved
	}
	src := nodeOf(op.sfi)
	if op.move {
		if err := moveNode(tx, src, dparent.ID, pathBase(dst)); err != nil {
			return err
		}
		if err := touchDir(tx, src.ParentID); err != nil {
			return err
		}
		if err := touchDir(tx, dparent.ID); err != nil {
			return err
		}
		if err := meta.moveTx(tx, uid, op.src, dst); err != nil {
			return err
		}
		return dropLocks(tx, uid, op.src)
	}
	if err := copyNodes(tx, src.ID, dparent.ID, pathBase(dst), op.infinite); err != nil {
		return err
	}
	if err := touchDir(tx, dparent.ID); err != nil {
		return err
	}
	return meta.copyTx(tx, uid, op.src, dst, op.infinite)
}

// ---- PUT ----

// PUT: the body streams into a new object under a fresh key (hashed on its
// way), then one transaction points the node at it, guarded by the
// version the node had when the request began, so of two writers racing
// on one file the second is refused (409) rather than silently
// overwriting. The object the node referenced before is reclaimed after
// the commit. A failed or aborted body leaves the node as it was and its
// object (or multipart upload) is deleted.

// nodePut is one PUT's new object.
type nodePut struct {
	t      *nodeTree
	parent *models.DavNode
	old    *models.DavNode // nil: a new file
	key    string          // the new object ("" for an empty body)
	// unrecorded: key has no dav_blobs row yet (a small body, see
	// receive); the commit inserts it live. written is when Put returned.
	unrecorded bool
	written    time.Time
	sha256     string
	node       *models.DavNode // as committed
}

// putTarget finds the target from its parent: one query instead of a
// walk of the whole path again.
func (t *nodeTree) putTarget(ctx context.Context, p string) (putTarget, error) {
	pfi, err := t.stat(ctx, pathParent(p))
	if err != nil || !pfi.IsDir() {
		return nil, fmt.Errorf("%w: %v", errNoParent, err)
	}
	np := &nodePut{t: t, parent: nodeOf(pfi)}
	n, err := t.b.tree.child(ctx, t.userID, np.parent.ID, pathBase(p))
	switch {
	case err == nil:
		np.old = n
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return np, nil
}

func (np *nodePut) existing() (fs.FileInfo, bool) {
	if np.old == nil {
		return nil, false
	}
	return nodeInfo{np.old}, true
}

// cleanup deletes the object of an upload that was not committed.
func (np *nodePut) cleanup(u *upload) {
	if np.key != "" && !u.done {
		np.t.b.blobs.abandon(u.rq.r.Context(), np.key)
	}
}

// receive streams the body into a new object, hashing it.
func (np *nodePut) receive(u *upload) error {
	rq := u.rq
	b := np.t.b.blobs
	hr := newHashReader(&limitedReader{r: rq.r.Body, left: u.limit, err: u.limitErr}, rq.r.ContentLength)
	defer hr.close()
	var err error
	switch {
	case rq.r.ContentLength == 0:
		u.n, err = io.Copy(io.Discard, hr)
	case rq.r.ContentLength < recordAfterBelow:
		// A small body: the object is written first and its row made
		// live by the node commit, one transaction per PUT instead of
		// two. Crash-safe all the same: until the commit no node
		// references the key, so the old contents stay what GET
		// serves; a crash between Put and the commit leaves an object
		// no row records, which the sweep's unrecorded pass deletes
		// once older than its grace period (an hour; commit refuses
		// an object older than unrecordedMaxAge, so the sweep can
		// never delete one a commit is about to reference). Bodies of
		// this size are sent whole in one request, so the object
		// appears only once complete and its age runs from there.
		np.key, np.unrecorded = newBlobKey(rq.user.ID), true
		u.n, err = b.contents.Put(rq.r.Context(), np.key, hr, rq.r.ContentLength, contents.PutHooks{})
		np.written = time.Now()
	default:
		np.key = newBlobKey(rq.user.ID)
		if err = b.begin(rq.r.Context(), rq.user.ID, np.key); err != nil {
			np.key = ""
			return err
		}
		u.n, err = b.contents.Put(rq.r.Context(), np.key, hr, rq.r.ContentLength, b.hooks(np.key))
	}
	if errors.Is(err, contents.ErrStoreUnavailable) {
		return err
	}
	u.md5sum, u.sha1sum, np.sha256 = hr.sums()
	return u.received(err, hr.readErr != nil)
}

// recordAfterBelow: bodies announced shorter than this (S3 contents read
// them whole and send one PutObject) get their dav_blobs row in the node
// commit; longer or unannounced ones, streamed or sent in parts for as
// long as the client takes, are recorded before their first byte.
const recordAfterBelow = contents.PartSize

// unrecordedMaxAge bounds how long an object written without a row may
// wait for its commit: well inside DefaultSweepGrace, past which the sweep
// deletes unrecorded objects.
const unrecordedMaxAge = DefaultSweepGrace / 4

// errChanged: the node changed between the start of the upload and its
// commit (another writer won).
var errChanged = errors.New("the file was changed by another request during the upload")

// commit points the node at the new object in one transaction.
func (np *nodePut) commit(u *upload) error {
	rq, h := u.rq, u.rq.h
	now := time.Now()
	mtime := now
	if v := rq.r.Header.Get("X-OC-Mtime"); v != "" {
		if t, ok := parseMtime(v); ok {
			mtime, u.mtimeOK = t, true
		}
	}
	n := &models.DavNode{UserID: rq.user.ID, ParentID: np.parent.ID, Name: pathBase(rq.path), Size: u.n,
		MtimeNs: mtime.UnixNano(), CreatedNs: now.UnixNano(), MD5: u.md5sum, SHA1: u.sha1sum, SHA256: np.sha256, Blob: np.key, Version: 1}
	err := h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		return np.commitTx(rq.r.Context(), tx, rq.path, n, u.n)
	})
	switch {
	case errors.Is(err, errParentMoved), errors.Is(err, errChanged):
		return refusal(http.StatusConflict, err.Error())
	case err != nil:
		return fmt.Errorf("commit upload: %w", err)
	}
	u.done, np.node = true, n
	if !u.admitted {
		h.quota.add(rq.user.ID, u.n-u.oldSize)
	}
	if np.old != nil && np.old.Blob != "" && np.old.Blob != np.key {
		np.t.reclaimLater(rq.r.Context(), np.old.Blob)
	}
	return nil
}

func (np *nodePut) commitTx(ctx context.Context, tx *gorm.DB, p string, n *models.DavNode, size int64) error {
	uid := np.t.userID
	// The parent must still be where the request found it: a
	// collection moved meanwhile was never covered by its checks.
	par, err := np.t.b.tree.lookup(ctx, tx, uid, pathParent(p))
	if err != nil || par.ID != np.parent.ID {
		return errParentMoved
	}
	switch {
	case np.key == "":
	case np.unrecorded:
		if time.Since(np.written) > unrecordedMaxAge {
			return errors.New("the upload's object is older than the sweep spares unrecorded objects")
		}
		if err := recordLiveTx(tx, uid, np.key, size); err != nil {
			return err
		}
	default:
		if err := goLiveTx(tx, np.key, size); err != nil {
			return err
		}
	}
	if err := writeFileTx(tx, np.old, n); err != nil || np.old != nil {
		return err
	}
	if err := touchDir(tx, np.parent.ID); err != nil {
		return err
	}
	// A new file must not inherit the properties of a deleted one.
	return np.t.h.meta.dropPropsTx(tx, uid, p)
}

func (np *nodePut) etag(*upload) string { return nodeETag(np.node) }

// limitedReader fails with err once more than left bytes are read
// (left < 0: no limit).
type limitedReader struct {
	r    io.Reader
	left int64
	err  error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.r.Read(p)
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, l.err
	}
	return n, err
}
