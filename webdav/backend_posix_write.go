package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// ---- COPY / MOVE ----

// copyMove renames (MOVE) or copies through temporary files (COPY); a
// destination a collection is involved in is deleted first.
func (t *posixTree) copyMove(ctx context.Context, op copyMove) error {
	if op.dfi != nil && !op.replace {
		if err := t.clearDestination(ctx, op.dst); err != nil {
			return fmt.Errorf("clear destination: %w", err)
		}
	}
	clearStale := op.dfi == nil || op.replace
	if op.move {
		return t.moveTo(ctx, op.src, op.dst, clearStale)
	}
	return t.copyTo(ctx, op.src, op.dst, op.sfi, op.infinite, clearStale)
}

// clearDestination deletes a destination a collection is involved in,
// with its metadata and the locks rooted below it; locks rooted at dst
// stay and cover what replaces it (RFC 4918 §7.5, §9.8.4, §9.9.3).
func (t *posixTree) clearDestination(ctx context.Context, dst string) error {
	if err := t.root.RemoveAll(rel(dst)); err != nil {
		return err
	}
	err := t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := t.h.meta.dropTx(tx, t.userID, dst); err != nil {
			return err
		}
		return dropLocksBelow(tx, t.userID, dst)
	})
	t.h.locksChanged()
	return err
}

// moveTo renames src to dst and moves its metadata; clearStale first
// drops rows left at dst (a name that did not exist, or the replaced
// file's properties and checksum; locks rooted at dst stay). The source's
// locks are dropped: RFC 4918 §9.9.4 says a MOVE does not move locks; the
// moved resources fall under dst's ancestors' locks.
func (t *posixTree) moveTo(ctx context.Context, src, dst string, clearStale bool) error {
	if err := t.root.Rename(rel(src), rel(dst)); err != nil {
		return err
	}
	meta := t.h.meta
	err := t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if clearStale {
			if err := meta.dropTx(tx, t.userID, dst); err != nil {
				return err
			}
		}
		if err := meta.moveTx(tx, t.userID, src, dst); err != nil {
			return err
		}
		return dropLocks(tx, t.userID, src)
	})
	t.h.locksChanged()
	return err
}

// copyTo copies src to dst with its metadata (not its locks).
func (t *posixTree) copyTo(ctx context.Context, src, dst string, sfi fs.FileInfo, infinite, clearStale bool) error {
	defer t.h.quota.invalidate(t.userID)
	var err error
	if sfi.IsDir() {
		err = t.copyTree(src, dst, infinite)
	} else {
		err = t.copyFile(src, dst, sfi)
	}
	if err != nil {
		return err
	}
	meta := t.h.meta
	err = t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if clearStale {
			if err := meta.dropTx(tx, t.userID, dst); err != nil {
				return err
			}
		}
		return meta.copyTx(tx, t.userID, src, dst, infinite)
	})
	meta.propsWritten()
	return err
}

// copyFile copies src to dst through a temporary file, keeping the
// modification time (so recorded checksums stay valid).
func (t *posixTree) copyFile(src, dst string, fi fs.FileInfo) error {
	in, err := t.root.Open(rel(src))
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := pathJoin(pathParent(dst), randName())
	out, err := t.root.OpenFile(rel(tmp), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = t.h.meta.copySum(in, out, fi)
	}
	if err == nil && t.h.opts.Fsync {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = t.root.Chtimes(rel(tmp), fi.ModTime(), fi.ModTime())
	}
	if err == nil {
		err = t.root.Rename(rel(tmp), rel(dst))
	}
	if err != nil {
		t.root.Remove(rel(tmp))
		return err
	}
	if t.h.opts.Fsync {
		d, err := t.openParent(dst)
		if err != nil {
			return err
		}
		defer t.closeParent(d)
		return syncDir(d)
	}
	return nil
}

// syncDir flushes the directory d to disk, making renames in it durable.
func syncDir(d *os.Root) error {
	f, err := d.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// copyTree copies a collection, reading directories in batches.
func (t *posixTree) copyTree(src, dst string, infinite bool) error {
	if err := t.root.Mkdir(rel(dst), 0o755); err != nil {
		return err
	}
	if !infinite {
		return nil
	}
	d, err := t.root.Open(rel(src))
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		ents, rerr := d.ReadDir(256)
		for _, e := range ents {
			if err := t.copyMember(src, dst, e); err != nil {
				return err
			}
		}
		if rerr == io.EOF || len(ents) == 0 {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// copyMember copies the entry e of src into dst.
func (t *posixTree) copyMember(src, dst string, e os.DirEntry) error {
	name := e.Name()
	if strings.HasPrefix(name, tmpPrefix) {
		return nil
	}
	s, d := pathJoin(src, name), pathJoin(dst, name)
	switch {
	case e.Type()&fs.ModeSymlink != 0:
		// Symlinked content is copied as files; symlinked directories
		// are skipped (no loops, no escapes).
		fi, err := t.root.Stat(rel(s))
		if err != nil || fi.IsDir() {
			return nil
		}
		return t.copyFile(s, d, fi)
	case e.IsDir():
		return t.copyTree(s, d, true)
	case !e.Type().IsRegular():
		return nil
	}
	fi, err := e.Info()
	if err != nil {
		return nil
	}
	return t.copyFile(s, d, fi)
}

// ---- PUT ----

// PUT: the body goes to a hidden temporary file beside the target and is
// renamed over it once complete, so a reader sees the old or the new
// content whole and an aborted upload leaves the old file as it was.

// posixPut is one PUT's temporary file in the target's parent.
type posixPut struct {
	t      *posixTree
	dir    *os.Root // the target's parent, opened once
	old    fs.FileInfo
	exists bool

	tmp    string
	f      *os.File
	inline bool // hashed while it streamed
	fi     fs.FileInfo
	sum    *models.DavChecksum
}

// putTarget opens the parent once, so the checks and the staging are each
// one system call on a single name; the final rename goes by path
// (publish).
func (t *posixTree) putTarget(_ context.Context, p string) (putTarget, error) {
	dir, err := t.openParent(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoParent, err)
	}
	pp := &posixPut{t: t, dir: dir}
	old, err := dir.Stat(pathBase(p))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.closeParent(dir)
		return nil, statError(err)
	}
	pp.old, pp.exists = old, err == nil
	return pp, nil
}

func (pp *posixPut) existing() (fs.FileInfo, bool) { return pp.old, pp.exists }

// receive streams the body into a new temporary file and seals it.
func (pp *posixPut) receive(u *upload) error {
	rq := u.rq
	pp.tmp = randName()
	f, err := pp.dir.OpenFile(pp.tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create upload temporary: %w", err)
	}
	pp.f = f
	// Small bodies, and uploads whose checksum the client wants verified,
	// are hashed as they arrive. Large ones are hashed after the answer
	// (hashLater): MD5 alone runs at ~550 MiB/s on a core, which would
	// otherwise bound every big upload; until the hash is recorded the
	// file simply publishes no checksum.
	pp.inline = rq.r.Header.Get("OC-Checksum") != "" || (rq.r.ContentLength >= 0 && rq.r.ContentLength <= smallUpload)
	if pp.inline {
		u.n, u.md5sum, u.sha1sum, err = copyHashed(f, rq.r.Body, rq.r.ContentLength, u.limit, u.limitErr)
	} else {
		u.n, err = copyLimited(f, rq.r.Body, u.limit, u.limitErr)
	}
	if err := u.received(err, err != nil); err != nil {
		return err
	}
	return pp.seal(u)
}

// seal sets the temporary's modification time (X-OC-Mtime), hands it to
// the metadata store with its checksum, flushes it when asked, and closes
// it.
func (pp *posixPut) seal(u *upload) error {
	rq, h := u.rq, u.rq.h
	if v := rq.r.Header.Get("X-OC-Mtime"); v != "" {
		if t, ok := parseMtime(v); ok && pp.dir.Chtimes(pp.tmp, t, t) == nil {
			u.mtimeOK = true
		}
	}
	// The rename keeps inode, size and modification time, so this is
	// what the published file reports.
	fi, err := pp.f.Stat()
	if err != nil {
		return fmt.Errorf("stat upload temporary: %w", err)
	}
	pp.fi = fi
	// Every version is recorded with a new generation (identity.go);
	// its hashes when it was hashed as it streamed, later otherwise.
	pp.sum = &models.DavChecksum{
		UserID: rq.user.ID, Path: rq.path, Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano(), Gen: newGen(),
	}
	if pp.inline {
		pp.sum.SHA1, pp.sum.MD5 = u.sha1sum, u.md5sum
	}
	if err := h.meta.sealUpload(pp.f, pp.sum); err != nil {
		return fmt.Errorf("seal upload: %w", err)
	}
	if h.opts.Fsync {
		if err := pp.f.Sync(); err != nil {
			return fmt.Errorf("flush upload: %w", err)
		}
	}
	if err := pp.f.Close(); err != nil {
		return fmt.Errorf("close upload temporary: %w", err)
	}
	return nil
}

// commit renames the temporary over the target and has the metadata store
// record what it needs.
func (pp *posixPut) commit(u *upload) error {
	rq, h := u.rq, u.rq.h
	err := h.meta.commitUpload(rq.r.Context(), uploadCommit{
		userID: rq.user.ID, path: rq.path, created: !u.exists, sum: pp.sum,
		publish: func() error { return pp.t.publish(rq.path, pp.tmp) }, published: &u.done,
	})
	if errors.Is(err, errParentMoved) {
		return refusal(http.StatusConflict, err.Error())
	}
	if err != nil {
		return fmt.Errorf("publish upload: %w", err)
	}
	if !u.admitted {
		h.quota.add(rq.user.ID, u.n-u.oldSize)
	}
	if h.opts.Fsync {
		// The rename is durable once the directory is.
		if err := syncDir(pp.dir); err != nil {
			return fmt.Errorf("flush directory: %w", err)
		}
	}
	if !pp.inline {
		h.hashLater(rq.user.ID, rq.path)
	}
	return nil
}

// etag is taken from the published file's stat (the rename moved its
// change time, which the database store's tags include) while it is
// still this upload's inode; if another write replaced it already, from
// the temporary's.
func (pp *posixPut) etag(u *upload) string {
	fi := pp.fi
	if now, err := pp.t.root.Stat(rel(u.rq.path)); err == nil && os.SameFile(now, pp.fi) {
		fi = now
	}
	return pp.t.etagWith(fi, *pp.sum, true)
}

// cleanup removes an unpublished temporary and closes the parent.
func (pp *posixPut) cleanup(u *upload) {
	if pp.f != nil && !u.done {
		pp.f.Close()
		pp.dir.Remove(pp.tmp)
	}
	pp.t.closeParent(pp.dir)
}

// publish renames the finished upload tmp (in the parent opened at the
// start) over p. The rename goes by path, not through the open parent:
// if the collection was moved meanwhile, the file must not land at the
// new place, which the request's lock checks never covered.
func (t *posixTree) publish(p, tmp string) error {
	err := t.root.Rename(rel(pathJoin(pathParent(p), tmp)), rel(p))
	if errors.Is(err, fs.ErrNotExist) {
		return errParentMoved
	}
	return err
}

// openParent opens the collection holding p as a root of its own (the
// user's root itself for a top-level name).
func (t *posixTree) openParent(p string) (*os.Root, error) {
	parent := pathParent(p)
	if parent == "/" {
		return t.root, nil
	}
	return t.root.OpenRoot(rel(parent))
}

func (t *posixTree) closeParent(dir *os.Root) {
	if dir != t.root {
		dir.Close()
	}
}
