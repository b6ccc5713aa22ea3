package webdav

import (
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

// PUT in tree mode: the body streams into a new object under a fresh key
// (hashed on its way), then one transaction points the node at it, guarded
// by the version the node had when the request began, so of two writers
// racing on one file the second is refused (409) rather than silently
// overwriting. The object the node referenced before is reclaimed after
// the commit. A failed or aborted body leaves the node as it was and its
// object (or multipart upload) is deleted.

func (rq *request) nodePut() (int, error) {
	if rq.path == "/" {
		return refuse(http.StatusMethodNotAllowed, "cannot PUT to the root collection")
	}
	if rq.r.Header.Get("Content-Range") != "" {
		return refuse(http.StatusBadRequest, "partial PUT is not supported")
	}
	if max := rq.h.opts.MaxUploadBytes; max > 0 && announced(rq.r) > max {
		rq.unread()
		return refuse(http.StatusRequestEntityTooLarge, "upload too large")
	}
	pfi, err := rq.stat(pathParent(rq.path))
	if err != nil || !pfi.IsDir() {
		return refuse(http.StatusConflict, "parent collection does not exist")
	}
	// The target from its parent, found just above: one query instead
	// of a walk of the whole path again.
	var old fs.FileInfo
	n, err := rq.h.nodes.tree.child(rq.r.Context(), rq.user.ID, nodeOf(pfi).ID, pathBase(rq.path))
	if err == nil {
		old = nodeInfo{n}
	}
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return statFailure(err)
	}
	if exists && old.IsDir() {
		return refuse(http.StatusMethodNotAllowed, "a collection exists at this path")
	}
	if err := rq.checkHTTPPreconditions(old, exists); err != nil {
		return http.StatusPreconditionFailed, err
	}
	if _, err := rq.precheck(target{path: rq.path, membership: !exists}); err != nil {
		return 0, err
	}
	u := &upload{rq: rq, exists: exists, quota: rq.h.quota.of(rq.user)}
	nu := &nodeUpload{upload: u, parent: nodeOf(pfi)}
	if exists {
		nu.old = nodeOf(old)
		u.oldSize = old.Size()
	}
	defer u.cleanup()
	defer nu.cleanup()
	if err := nu.run(); err != nil {
		return 0, err
	}
	return nu.answer(), nil
}

// nodeUpload is one tree-mode PUT (the upload fields it shares with POSIX
// mode: limits, size, quota admission).
type nodeUpload struct {
	*upload
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

func (u *nodeUpload) run() error {
	if err := u.bound(); err != nil {
		return err
	}
	if err := u.receive(); err != nil {
		return err
	}
	if _, err := u.rq.precheck(target{path: u.rq.path, membership: !u.exists}); err != nil {
		return err
	}
	if err := u.admit(); err != nil {
		return err
	}
	return u.commit()
}

// cleanup deletes the object of an upload that was not committed.
func (u *nodeUpload) cleanup() {
	if u.key != "" && !u.done {
		u.rq.h.nodes.blobs.abandon(u.rq.r.Context(), u.key)
	}
}

// receive streams the body into a new object, hashing it.
func (u *nodeUpload) receive() error {
	rq := u.rq
	b := rq.h.nodes.blobs
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
		u.key, u.unrecorded = newBlobKey(rq.user.ID), true
		u.n, err = b.contents.Put(rq.r.Context(), u.key, hr, rq.r.ContentLength, contents.PutHooks{})
		u.written = time.Now()
	default:
		u.key = newBlobKey(rq.user.ID)
		if err = b.begin(rq.r.Context(), rq.user.ID, u.key); err != nil {
			u.key = ""
			return err
		}
		u.n, err = b.contents.Put(rq.r.Context(), u.key, hr, rq.r.ContentLength, b.hooks(u.key))
	}
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
	case errors.Is(err, errTooLarge), errors.As(err, &mbe):
		return refusal(http.StatusRequestEntityTooLarge, "upload too large")
	case errors.Is(err, errQuota):
		return refusal(http.StatusInsufficientStorage, "quota exceeded")
	case errors.Is(err, contents.ErrStoreUnavailable):
		return err
	case hr.readErr != nil:
		rq.h.log.Info("webdav upload aborted", "user", rq.user.Username, "path", rq.path, "err", err)
		return refusal(http.StatusBadRequest, "upload incomplete")
	default:
		return fmt.Errorf("store upload: %w", err)
	}
	if rq.r.ContentLength >= 0 && u.n != rq.r.ContentLength {
		return refusal(http.StatusBadRequest, "upload incomplete")
	}
	u.md5sum, u.sha1sum, u.sha256 = hr.sums()
	if v := rq.r.Header.Get("OC-Checksum"); v != "" && !checksumMatches(v, u.md5sum, u.sha1sum) {
		return refusal(http.StatusBadRequest, "checksum mismatch")
	}
	return nil
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
func (u *nodeUpload) commit() error {
	rq, h := u.rq, u.rq.h
	now := time.Now()
	mtime := now
	if v := rq.r.Header.Get("X-OC-Mtime"); v != "" {
		if t, ok := parseMtime(v); ok {
			mtime, u.mtimeOK = t, true
		}
	}
	n := &models.DavNode{UserID: rq.user.ID, ParentID: u.parent.ID, Name: pathBase(rq.path), Size: u.n,
		MtimeNs: mtime.UnixNano(), CreatedNs: now.UnixNano(), MD5: u.md5sum, SHA1: u.sha1sum, SHA256: u.sha256, Blob: u.key, Version: 1}
	err := h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		// The parent must still be where the request found it: a
		// collection moved meanwhile was never covered by its checks.
		p, err := h.nodes.tree.lookup(rq.r.Context(), tx, rq.user.ID, pathParent(rq.path))
		if err != nil || p.ID != u.parent.ID {
			return errParentMoved
		}
		switch {
		case u.key == "":
		case u.unrecorded:
			if time.Since(u.written) > unrecordedMaxAge {
				return errors.New("the upload's object is older than the sweep spares unrecorded objects")
			}
			if err := recordLiveTx(tx, rq.user.ID, u.key, u.n); err != nil {
				return err
			}
		default:
			if err := goLiveTx(tx, u.key, u.n); err != nil {
				return err
			}
		}
		if err := writeFileTx(tx, u.old, n); err != nil || u.old != nil {
			return err
		}
		if err := touchDir(tx, u.parent.ID); err != nil {
			return err
		}
		// A new file must not inherit the properties of a deleted one.
		return h.meta.dropPropsTx(tx, rq.user.ID, rq.path)
	})
	switch {
	case errors.Is(err, errParentMoved), errors.Is(err, errChanged):
		return refusal(http.StatusConflict, err.Error())
	case err != nil:
		return fmt.Errorf("commit upload: %w", err)
	}
	u.done, u.node = true, n
	if !u.admitted {
		h.quota.add(rq.user.ID, u.n-u.oldSize)
	}
	if u.old != nil && u.old.Blob != "" && u.old.Blob != u.key {
		rq.reclaimLater(u.old.Blob)
	}
	return nil
}

// answer sets the new ETag and returns 201 or 204.
func (u *nodeUpload) answer() int { return u.rq.answerPut(nodeETag(u.node), u.mtimeOK, u.exists) }

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
