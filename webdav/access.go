package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
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
	if h.nodes != nil {
		n, err := h.nodes.tree.lookup(ctx, h.db, userID, ip)
		if err != nil {
			return FileInfo{}, err
		}
		return FileInfo{Path: ip, Dir: n.Dir, Size: nodeInfo{n}.Size(), ModTime: time.Unix(0, n.MtimeNs), ETag: nodeETag(n), SHA1: n.SHA1, MD5: n.MD5}, nil
	}
	root, err := h.openRoot(userID)
	if err != nil {
		return FileInfo{}, fmt.Errorf("open user root: %w", err)
	}
	defer root.Close()
	fi, err := root.Stat(rel(ip))
	if err != nil {
		return FileInfo{}, err
	}
	return posixInfo(ip, fi, h.etagAt(ctx, root, userID, ip, fi)), nil
}

func posixInfo(p string, fi fs.FileInfo, etag string) FileInfo {
	out := FileInfo{Path: p, Dir: fi.IsDir(), ModTime: fi.ModTime(), ETag: etag}
	if !fi.IsDir() {
		out.Size = fi.Size()
	}
	return out
}

// Open reads n bytes (n < 0: to the end) of the user's file p from off.
func (h *Handler) Open(ctx context.Context, userID, p string, off, n int64) (io.ReadCloser, FileInfo, error) {
	fi, err := h.Stat(ctx, userID, p)
	if err != nil {
		return nil, fi, err
	}
	if fi.Dir {
		return nil, fi, errors.New("a collection has no contents")
	}
	if off < 0 || off > fi.Size {
		return nil, fi, fmt.Errorf("offset %d beyond the file's %d bytes", off, fi.Size)
	}
	if n < 0 || off+n > fi.Size {
		n = fi.Size - off
	}
	if h.nodes != nil {
		nd, err := h.nodes.tree.lookup(ctx, h.db, userID, fi.Path)
		if err != nil {
			return nil, fi, err
		}
		if nd.Blob == "" || n == 0 {
			return io.NopCloser(strings.NewReader("")), fi, nil
		}
		rc, err := h.nodes.blobs.contents.Get(ctx, nd.Blob, off, n)
		return rc, fi, err
	}
	root, err := h.openRoot(userID)
	if err != nil {
		return nil, fi, fmt.Errorf("open user root: %w", err)
	}
	f, err := root.Open(rel(fi.Path))
	root.Close()
	if err != nil {
		return nil, fi, err
	}
	return sectionCloser{io.NewSectionReader(f, off, n), f}, fi, nil
}

type sectionCloser struct {
	io.Reader
	f *os.File
}

func (s sectionCloser) Close() error { return s.f.Close() }

// ReadDir lists the members of the user's collection p (any order).
func (h *Handler) ReadDir(ctx context.Context, userID, p string) ([]FileInfo, error) {
	ip, ok := h.cleanPath(p)
	if !ok {
		return nil, fs.ErrInvalid
	}
	var out []FileInfo
	if h.nodes != nil {
		dir, err := h.nodes.tree.lookup(ctx, h.db, userID, ip)
		if err != nil {
			return nil, err
		}
		for after := ""; ; {
			ns, err := h.nodes.tree.list(ctx, userID, dir.ID, after, 1000)
			if err != nil {
				return nil, err
			}
			for i := range ns {
				n := &ns[i]
				out = append(out, FileInfo{Path: pathJoin(ip, n.Name), Dir: n.Dir, Size: nodeInfo{n}.Size(), ModTime: time.Unix(0, n.MtimeNs), ETag: nodeETag(n), SHA1: n.SHA1, MD5: n.MD5})
			}
			if len(ns) < 1000 {
				return out, nil
			}
			after = ns[len(ns)-1].Name
		}
	}
	root, err := h.openRoot(userID)
	if err != nil {
		return nil, fmt.Errorf("open user root: %w", err)
	}
	defer root.Close()
	d, err := root.Open(rel(ip))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	batch := make([]entry, 0, len(ents))
	for _, e := range ents {
		if isReserved(e.Name()) {
			continue
		}
		p := pathJoin(ip, e.Name())
		fi, err := root.Stat(rel(p))
		if err != nil {
			continue
		}
		batch = append(batch, entry{path: p, fi: fi, link: e.Type()&fs.ModeSymlink != 0})
	}
	// The members' records in one pass over the open directory, for their
	// ETags, as PROPFIND reads them.
	recs, err := h.meta.sumsFor(ctx, root, userID, d, batch)
	if err != nil {
		return nil, err
	}
	for _, e := range batch {
		rec, ok := recs[e.path]
		out = append(out, posixInfo(e.path, e.fi, h.etagWith(e.fi, rec, ok)))
	}
	return out, nil
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
