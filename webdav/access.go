package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// Access to a user's tree from outside the WebDAV protocol (other
// packages, migrate-store, tests), the same in both storage modes.

// FileInfo describes a file or collection of a user's tree.
type FileInfo struct {
	Path    string // "/" or "/a/b"
	Dir     bool
	Size    int64
	ModTime time.Time
	ETag    string
	// SHA1 and MD5 are the recorded checksums ("" when unknown).
	SHA1, MD5 string
}

// Stat describes path p ("/a/b", as under /webdav) of the user's tree;
// fs.ErrNotExist when there is nothing there.
func (h *Handler) Stat(ctx context.Context, userID, p string) (FileInfo, error) {
	ip, ok := h.cleanPath(p)
	if !ok {
		return FileInfo{}, fs.ErrInvalid
	}
	t, err := h.store.open(ctx, userID)
	if err != nil {
		return FileInfo{}, err
	}
	defer t.close()
	fi, err := t.stat(ctx, ip)
	if err != nil {
		return FileInfo{}, err
	}
	out := publicInfo(ip, fi, t.etag(ctx, ip, fi))
	if h.store.hashesEveryWrite() {
		// The row carries the checksums with the version; a POSIX
		// file's record would have to be checked against the file.
		recs, err := t.sums(ctx, nil, []entry{{path: ip, fi: fi}}, true, false)
		if err != nil {
			return FileInfo{}, err
		}
		out.SHA1, out.MD5 = recs[ip].SHA1, recs[ip].MD5
	}
	return out, nil
}

func publicInfo(p string, fi fs.FileInfo, etag string) FileInfo {
	out := FileInfo{Path: p, Dir: fi.IsDir(), ModTime: fi.ModTime(), ETag: etag}
	if !fi.IsDir() {
		out.Size = fi.Size()
	}
	return out
}

// Open reads n bytes (n < 0: to the end) of the user's file p from off.
func (h *Handler) Open(ctx context.Context, userID, p string, off, n int64) (io.ReadCloser, FileInfo, error) {
	ip, ok := h.cleanPath(p)
	if !ok {
		return nil, FileInfo{}, fs.ErrInvalid
	}
	t, err := h.store.open(ctx, userID)
	if err != nil {
		return nil, FileInfo{}, err
	}
	defer t.close()
	fi, err := t.stat(ctx, ip)
	if err != nil {
		return nil, FileInfo{}, err
	}
	info := publicInfo(ip, fi, t.etag(ctx, ip, fi))
	if info.Dir {
		return nil, info, errors.New("a collection has no contents")
	}
	if off < 0 || off > info.Size {
		return nil, info, fmt.Errorf("offset %d beyond the file's %d bytes", off, info.Size)
	}
	if n < 0 || off+n > info.Size {
		n = info.Size - off
	}
	rc, err := t.readRange(ctx, ip, fi, off, n)
	return rc, info, err
}

// ReadDir lists the members of the user's collection p (any order).
func (h *Handler) ReadDir(ctx context.Context, userID, p string) ([]FileInfo, error) {
	ip, ok := h.cleanPath(p)
	if !ok {
		return nil, fs.ErrInvalid
	}
	t, err := h.store.open(ctx, userID)
	if err != nil {
		return nil, err
	}
	defer t.close()
	dir, err := t.stat(ctx, ip)
	if err != nil {
		return nil, err
	}
	withSums := h.store.hashesEveryWrite()
	var out []FileInfo
	err = t.members(ctx, ip, dir, 1000, func(batch []entry, listing any) error {
		// The members' records in one pass over the listing, for their
		// ETags, as PROPFIND reads them.
		recs, err := t.sums(ctx, listing, batch, withSums, true)
		if err != nil {
			return err
		}
		for _, e := range batch {
			rec, ok := recs[e.path]
			fi := publicInfo(e.path, e.fi, t.etagWith(e.fi, rec, ok))
			if withSums {
				fi.SHA1, fi.MD5 = rec.SHA1, rec.MD5
			}
			out = append(out, fi)
		}
		return nil
	})
	return out, err
}

// cleanPath maps "/a/b" (or "a/b") to an internal path.
func (h *Handler) cleanPath(p string) (string, bool) {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	ip, ok := h.internalPath(h.opts.Prefix + p)
	if !ok || isReserved(ip) {
		return "", false
	}
	return ip, true
}
