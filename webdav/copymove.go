package webdav

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"

	"gorm.io/gorm"
)

// serveCopyMove copies or moves the resource to the Destination (RFC 4918
// §9.8, §9.9); locks never travel with it (§7.5).
func (rq *request) serveCopyMove() (int, error) {
	move := rq.r.Method == "MOVE"
	dst, infinite, overwrite, err := rq.copyMoveHeaders(move)
	if err != nil {
		return 0, err
	}
	sfi, err := rq.root.Stat(rel(rq.path))
	if err != nil {
		return statFailure(err)
	}
	dfi, dexists, err := rq.checkCopyMoveTarget(dst, sfi, overwrite)
	if err != nil {
		return 0, err
	}
	targets := []target{{path: dst, membership: true, subtree: true}}
	if move {
		targets = append(targets, target{path: rq.path, membership: true, subtree: true})
	}
	if _, err := rq.precheck(targets...); err != nil {
		return 0, err
	}
	if !move {
		settle, err := rq.admitCopy(dst, sfi, dfi, dexists, infinite)
		if err != nil {
			return 0, err
		}
		defer settle()
	}
	// A file replacing a file is renamed over it (MOVE, and COPY through
	// its temporary file), so a failed transfer leaves the old destination
	// whole; anything involving a collection deletes the destination first.
	replace := dexists && !dfi.IsDir() && !sfi.IsDir()
	if dexists && !replace {
		if err := rq.clearDestination(dst); err != nil {
			return internal(fmt.Errorf("clear destination: %w", err))
		}
	}
	if move {
		err = rq.moveTo(dst, !dexists || replace)
	} else {
		err = rq.copyTo(dst, sfi, infinite, !dexists || replace)
	}
	if err != nil {
		return internal(fmt.Errorf("%s: %w", strings.ToLower(rq.r.Method), err))
	}
	if dexists {
		return http.StatusNoContent, nil
	}
	rq.w.Header().Set("Location", rq.h.href(dst, sfi.IsDir()))
	return http.StatusCreated, nil
}

// copyMoveHeaders reads Destination, Depth and Overwrite.
func (rq *request) copyMoveHeaders(move bool) (dst string, infinite, overwrite bool, err error) {
	h := rq.h
	dh := rq.r.Header.Get("Destination")
	if dh == "" {
		return "", false, false, refusal(http.StatusBadRequest, "missing Destination")
	}
	u, err := url.Parse(dh)
	if err != nil || u.RawQuery != "" || u.ForceQuery || strings.Contains(dh, "#") {
		// A raw '?' or '#' would cut the name short and aim the MOVE or
		// COPY at another resource (an existing parent, say, which
		// Overwrite: T would then delete); clients percent-encode them.
		return "", false, false, refusal(http.StatusBadRequest, "malformed Destination (a '?' or '#' in a name must be percent-encoded)")
	}
	if u.Host != "" && !strings.EqualFold(u.Host, rq.r.Host) {
		return "", false, false, refusal(http.StatusBadGateway, "Destination is on another server")
	}
	if u.Path != h.opts.Prefix && !strings.HasPrefix(u.Path, h.opts.Prefix+"/") {
		return "", false, false, refusal(http.StatusForbidden, "Destination is outside the WebDAV tree")
	}
	dst, ok := h.internalPath(u.Path)
	if !ok {
		return "", false, false, refusal(http.StatusBadRequest, "invalid Destination")
	}
	if isReserved(dst) || dst == "/" || rq.path == "/" {
		return "", false, false, refusal(http.StatusForbidden, "forbidden")
	}
	infinite = true
	switch d := rq.r.Header.Get("Depth"); {
	case d == "" || strings.EqualFold(d, "infinity"):
	case d == "0" && !move:
		infinite = false
	default:
		return "", false, false, refusal(http.StatusBadRequest, "invalid Depth")
	}
	overwrite = true
	switch rq.r.Header.Get("Overwrite") {
	case "", "T", "t":
	case "F", "f":
		overwrite = false
	default:
		return "", false, false, refusal(http.StatusBadRequest, "invalid Overwrite")
	}
	return dst, infinite, overwrite, nil
}

// checkCopyMoveTarget refuses destinations the source cannot go to and
// stats the destination.
func (rq *request) checkCopyMoveTarget(dst string, sfi fs.FileInfo, overwrite bool) (dfi fs.FileInfo, dexists bool, err error) {
	if dst == rq.path {
		return nil, false, refusal(http.StatusForbidden, "source and destination are the same")
	}
	if sfi.IsDir() && isUnder(dst, rq.path) {
		return nil, false, refusal(http.StatusForbidden, "destination is inside the source")
	}
	if isUnder(rq.path, dst) {
		// Overwriting an ancestor would delete the source with it.
		return nil, false, refusal(http.StatusForbidden, "destination contains the source")
	}
	pfi, err := rq.stat(pathParent(dst))
	if err != nil || !pfi.IsDir() {
		return nil, false, refusal(http.StatusConflict, "destination parent does not exist")
	}
	dfi, err = rq.lstat(dst)
	dexists = err == nil
	if dexists && !overwrite {
		return nil, false, refusal(http.StatusPreconditionFailed, "destination exists")
	}
	return dfi, dexists, nil
}

// clearDestination deletes a destination a collection is involved in,
// with its metadata and the locks rooted below it; locks rooted at dst
// stay and cover what replaces it (RFC 4918 §7.5, §9.8.4, §9.9.3).
func (rq *request) clearDestination(dst string) error {
	if err := rq.root.RemoveAll(rel(dst)); err != nil {
		return err
	}
	err := rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if err := rq.h.meta.dropTx(tx, rq.user.ID, dst); err != nil {
			return err
		}
		return dropLocksBelow(tx, rq.user.ID, dst)
	})
	rq.h.locksChanged()
	return err
}

// moveTo renames the source to dst and moves its metadata; clearStale
// first drops rows left at dst (a name that did not exist, or the replaced
// file's properties and checksum; locks rooted at dst stay). The source's
// locks are dropped: RFC 4918 §9.9.4 says a MOVE does not move locks; the
// moved resources fall under dst's ancestors' locks.
func (rq *request) moveTo(dst string, clearStale bool) error {
	if err := rq.root.Rename(rel(rq.path), rel(dst)); err != nil {
		return err
	}
	meta := rq.h.meta
	err := rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if clearStale {
			if err := meta.dropTx(tx, rq.user.ID, dst); err != nil {
				return err
			}
		}
		if err := meta.moveTx(tx, rq.user.ID, rq.path, dst); err != nil {
			return err
		}
		return dropLocks(tx, rq.user.ID, rq.path)
	})
	rq.h.locksChanged()
	return err
}

// copyTo copies the source to dst with its metadata (not its locks).
func (rq *request) copyTo(dst string, sfi fs.FileInfo, infinite, clearStale bool) error {
	defer rq.h.quota.invalidate(rq.user.ID)
	var err error
	if sfi.IsDir() {
		err = rq.copyTree(rq.path, dst, infinite)
	} else {
		err = rq.copyFile(rq.path, dst, sfi)
	}
	if err != nil {
		return err
	}
	meta := rq.h.meta
	err = rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if clearStale {
			if err := meta.dropTx(tx, rq.user.ID, dst); err != nil {
				return err
			}
		}
		return meta.copyTx(tx, rq.user.ID, rq.path, dst, infinite)
	})
	meta.propsWritten()
	return err
}

// admitCopy reserves a COPY's growth of the tree (the source's size less
// the replaced destination's) against the user's quota: 507 when it does
// not fit. settle ends the reservation.
func (rq *request) admitCopy(dst string, sfi, dfi fs.FileInfo, dexists, infinite bool) (settle func(), err error) {
	q := rq.h.quota
	quota := q.of(rq.user)
	if quota <= 0 {
		return func() {}, nil
	}
	size := func(p string, fi fs.FileInfo, deep bool) (int64, error) {
		switch {
		case !fi.IsDir():
			return fi.Size(), nil
		case deep && rq.h.nodes != nil:
			return subtreeSize(rq.r.Context(), rq.h.db, nodeOf(fi).ID)
		case deep:
			return treeSize(rq.root, rel(p))
		}
		return 0, nil
	}
	grow, err := size(rq.path, sfi, infinite)
	if err == nil && dexists {
		var freed int64
		freed, err = size(dst, dfi, true)
		grow -= freed
	}
	ok := false
	if err == nil {
		ok, err = q.admit(rq.root, rq.user.ID, quota, grow)
	}
	if err != nil {
		return nil, fmt.Errorf("admit copy: %w", err)
	}
	if !ok {
		return nil, refusal(http.StatusInsufficientStorage, "quota exceeded")
	}
	// The copy invalidates the cached usage whatever happens; only the
	// reservation is left to release.
	return func() { q.settle(rq.user.ID, grow, false) }, nil
}

// copyFile copies src to dst through a temporary file, keeping the
// modification time (so recorded checksums stay valid).
func (rq *request) copyFile(src, dst string, fi fs.FileInfo) error {
	in, err := rq.root.Open(rel(src))
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := pathJoin(pathParent(dst), randName())
	out, err := rq.root.OpenFile(rel(tmp), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = rq.h.meta.copySum(in, out, fi)
	}
	if err == nil && rq.h.opts.Fsync {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rq.root.Chtimes(rel(tmp), fi.ModTime(), fi.ModTime())
	}
	if err == nil {
		err = rq.root.Rename(rel(tmp), rel(dst))
	}
	if err != nil {
		rq.root.Remove(rel(tmp))
		return err
	}
	if rq.h.opts.Fsync {
		d, err := rq.openParent(dst)
		if err != nil {
			return err
		}
		defer rq.closeParent(d)
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
func (rq *request) copyTree(src, dst string, infinite bool) error {
	if err := rq.root.Mkdir(rel(dst), 0o755); err != nil {
		return err
	}
	if !infinite {
		return nil
	}
	d, err := rq.root.Open(rel(src))
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		ents, rerr := d.ReadDir(256)
		for _, e := range ents {
			name := e.Name()
			if strings.HasPrefix(name, tmpPrefix) {
				continue
			}
			s, t := pathJoin(src, name), pathJoin(dst, name)
			if e.Type()&fs.ModeSymlink != 0 {
				// Symlinked content is copied as files; symlinked
				// directories are skipped (no loops, no escapes).
				fi, err := rq.root.Stat(rel(s))
				if err != nil || fi.IsDir() {
					continue
				}
				if err := rq.copyFile(s, t, fi); err != nil {
					return err
				}
				continue
			}
			if e.IsDir() {
				if err := rq.copyTree(s, t, true); err != nil {
					return err
				}
				continue
			}
			if !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			if err := rq.copyFile(s, t, fi); err != nil {
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
