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
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// posixBackend keeps each user's tree as a directory under Options.Root,
// opened with os.Root so that no path, encoded traversal or symlink can
// leave it. Checksums and version generations live with the metadata
// store (meta.go: on the files' extended attributes where the file system
// has them, else in the database); writes are a temporary file renamed
// over the target.
type posixBackend struct{ h *Handler }

func (b *posixBackend) kind() string { return "posix" }

func (b *posixBackend) open(_ context.Context, userID string) (userTree, error) {
	root, err := b.h.openRoot(userID)
	if err != nil {
		return nil, fmt.Errorf("open user root: %w", err)
	}
	return &posixTree{h: b.h, root: root, userID: userID}, nil
}

func (b *posixBackend) freeBytes() int64 {
	free, err := freeBytes(b.h.opts.Root)
	if err != nil {
		return 0
	}
	return free
}

// posixBackend has no sweeper: an interrupted upload's temporary file is
// removed by the listings and quota walks that meet it
// (sweepStaleUpload).

// hashesEveryWrite: large uploads are hashed after the answer (hash.go).
func (b *posixBackend) hashesEveryWrite() bool { return false }

// posixTree is one user's directory, open for one request.
type posixTree struct {
	h      *Handler
	root   *os.Root
	userID string
}

func (t *posixTree) close() { t.root.Close() }

func (t *posixTree) stat(_ context.Context, p string) (fs.FileInfo, error) {
	return t.root.Stat(rel(p))
}

func (t *posixTree) lstat(_ context.Context, p string) (fs.FileInfo, error) {
	return t.root.Lstat(rel(p))
}

// etag reads a file's record through the file, opened, and takes the tag
// from that open file's own stat, so record and stat describe one version
// even if p is replaced meanwhile.
func (t *posixTree) etag(ctx context.Context, p string, fi fs.FileInfo) string {
	if !fi.Mode().IsRegular() {
		return t.etagWith(fi, models.DavChecksum{}, false)
	}
	f, err := t.root.Open(rel(p))
	if err != nil {
		return t.etagWith(fi, models.DavChecksum{}, false)
	}
	defer f.Close()
	return t.etagOfOpen(ctx, p, f, fi)
}

// etagWith is the metadata store's shape of inode, mtime, size and
// generation (identity.go).
func (t *posixTree) etagWith(fi fs.FileInfo, rec models.DavChecksum, ok bool) string {
	return t.h.meta.etag(fi, rec, ok)
}

// etagOfOpen is the tag of the open file f at p (fi: a stat of p, used if
// f cannot be stat'ed).
func (t *posixTree) etagOfOpen(ctx context.Context, p string, f *os.File, fi fs.FileInfo) string {
	if now, err := f.Stat(); err == nil {
		fi = now
	}
	rec, ok, err := t.h.meta.recordOf(ctx, t.userID, p, f)
	if err != nil {
		// Without the record the tag ends in the change time: still
		// one no client can reproduce, only less stable.
		t.h.log.Warn("webdav: read a file's record", "path", p, "err", err)
		ok = false
	}
	return t.etagWith(fi, rec, ok)
}

// members reads the directory in pages so memory stays flat however large
// it is; the open directory is the listing sums reads records through.
func (t *posixTree) members(_ context.Context, p string, _ fs.FileInfo, page int, fn func([]entry, any) error) error {
	d, err := t.root.Open(rel(p))
	if err != nil {
		return err
	}
	defer d.Close()
	batch := make([]entry, 0, page)
	for {
		ents, rerr := d.ReadDir(page)
		batch = batch[:0]
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				sweepStaleUpload(t.root, rel(pathJoin(p, e.Name())), e)
				continue
			}
			if m, ok := t.member(p, e); ok {
				batch = append(batch, m)
			}
		}
		if len(batch) > 0 {
			if err := fn(batch, d); err != nil {
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

// member is how an entry of a listed directory is shown, by PROPFIND and
// the HTML index alike (issue 41 item 4): a symlink is its target's if
// that lies inside the root, and not shown if it leads out or nowhere; an
// entry that vanished before its stat is not shown.
func (t *posixTree) member(dir string, e os.DirEntry) (entry, bool) {
	p := pathJoin(dir, e.Name())
	link := e.Type()&fs.ModeSymlink != 0
	var fi fs.FileInfo
	var err error
	if link {
		fi, err = t.root.Stat(rel(p))
	} else {
		fi, err = e.Info()
	}
	if err != nil {
		return entry{}, false
	}
	return entry{path: p, fi: fi, link: link}, true
}

func (t *posixTree) sums(ctx context.Context, listing any, batch []entry, withSums, withETags bool) (map[string]models.DavChecksum, error) {
	if !withSums && !withETags {
		return nil, nil
	}
	dir, _ := listing.(*os.File)
	return t.h.meta.sumsFor(ctx, t.root, t.userID, dir, batch)
}

func (t *posixTree) fileBytes(_ context.Context, p string, fi fs.FileInfo) (int64, error) {
	if fi != nil && !fi.IsDir() {
		return fi.Size(), nil
	}
	return treeSize(t.root, rel(p))
}

// ---- GET ----

// posixContent is an open file: sent with sendfile where the connection
// allows, its tag taken from the open file.
type posixContent struct {
	f   *os.File
	fi  fs.FileInfo
	tag string
}

func (t *posixTree) openFile(ctx context.Context, p string) (fileContent, error) {
	f, err := t.root.Open(rel(p))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat opened file: %w", err)
	}
	c := &posixContent{f: f, fi: fi}
	switch {
	case fi.IsDir():
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, refusal(http.StatusForbidden, "not a regular file")
	default:
		c.tag = t.etagOfOpen(ctx, p, f, fi)
	}
	return c, nil
}

func (c *posixContent) info() fs.FileInfo                                                 { return c.fi }
func (c *posixContent) etag() string                                                      { return c.tag }
func (c *posixContent) body() io.ReadSeeker                                               { return c.f }
func (c *posixContent) prepare(*http.Request) error                                       { return nil }
func (c *posixContent) close()                                                            { c.f.Close() }
func (c *posixContent) writer(w http.ResponseWriter, _ *http.Request) http.ResponseWriter { return w }

func (t *posixTree) readRange(_ context.Context, p string, _ fs.FileInfo, off, n int64) (io.ReadCloser, error) {
	f, err := t.root.Open(rel(p))
	if err != nil {
		return nil, err
	}
	return sectionCloser{io.NewSectionReader(f, off, n), f}, nil
}

type sectionCloser struct {
	io.Reader
	f *os.File
}

func (s sectionCloser) Close() error { return s.f.Close() }

// ---- MKCOL, LOCK of an unmapped URL ----

func (t *posixTree) mkcol(ctx context.Context, p string, _ fs.FileInfo) error {
	if err := t.root.Mkdir(rel(p), 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return errExists
		}
		return err
	}
	if err := t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return t.h.meta.dropTx(tx, t.userID, p)
	}); err != nil {
		return fmt.Errorf("drop stale metadata: %w", err)
	}
	return nil
}

func (t *posixTree) createEmpty(ctx context.Context, p string) (bool, error) {
	f, err := t.root.OpenFile(rel(p), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f.Close()
	err = t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return t.h.meta.dropTx(tx, t.userID, p) })
	return err == nil, err
}

// ---- PROPPATCH of a modification time ----

func (t *posixTree) setMtimeTx(tx *gorm.DB, p string, fi fs.FileInfo, mtime time.Time) (func() error, error) {
	if err := t.h.meta.chtimes(tx, t.root, t.userID, p, fi, mtime); err != nil {
		return nil, fmt.Errorf("set modification time: %w", err)
	}
	// The store's record of the checksum goes back with the
	// transaction; the time on the file (or its attribute) is put back
	// by hand, even if the client has gone.
	ctx := context.WithoutCancel(tx.Statement.Context)
	return func() error {
		now, err := t.root.Stat(rel(p))
		if err != nil {
			return err
		}
		return t.h.meta.chtimes(t.h.db.WithContext(ctx), t.root, t.userID, p, now, fi.ModTime())
	}, nil
}

// ---- DELETE ----

func (t *posixTree) remove(ctx context.Context, p string, fi fs.FileInfo) ([]deleteFailure, error) {
	if !fi.IsDir() {
		if err := t.root.Remove(rel(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove file: %w", err)
		}
		if err := t.dropMeta(ctx, []string{p}); err != nil {
			return nil, err
		}
		t.h.quota.add(t.userID, -fi.Size())
		return nil, nil
	}
	var d deletion
	done := t.removeTree(p, &d)
	t.h.quota.invalidate(t.userID)
	removed := d.removed
	if done {
		removed = []string{p}
	}
	// Whatever was removed loses its properties, checksums and locks,
	// even when some members could not be.
	if err := t.dropMeta(ctx, removed); err != nil {
		return nil, err
	}
	return d.failed, nil
}

// deletion collects what a collection's DELETE removed (only the members
// of collections that could not be removed whole) and what it could not.
type deletion struct {
	removed []string
	failed  []deleteFailure
}

// maxDeleteFailures bounds the members a 207 lists.
const maxDeleteFailures = 1000

// removeTree removes collection p and everything in it, depth first, and
// reports whether p itself is gone.
func (t *posixTree) removeTree(p string, d *deletion) bool {
	dir, err := t.root.Open(rel(p))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return true
		}
		d.fail(p, true, err)
		return false
	}
	var gone []string
	whole := true
	for {
		ents, rerr := dir.ReadDir(512)
		for _, e := range ents {
			child := pathJoin(p, e.Name())
			ok := false
			if e.IsDir() {
				ok = t.removeTree(child, d)
			} else if err := t.root.Remove(rel(child)); err == nil || errors.Is(err, os.ErrNotExist) {
				ok = true
			} else {
				d.fail(child, false, err)
			}
			if ok {
				gone = append(gone, child)
			} else {
				whole = false
			}
		}
		if rerr != nil || len(ents) == 0 {
			if rerr != nil && rerr != io.EOF {
				d.fail(p, true, rerr)
				whole = false
			}
			break
		}
	}
	dir.Close()
	if whole {
		err := t.root.Remove(rel(p))
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return true
		}
		d.fail(p, true, err) // something appeared in it meanwhile, say
	}
	d.removed = append(d.removed, gone...)
	return false
}

func (d *deletion) fail(p string, dir bool, err error) {
	if len(d.failed) >= maxDeleteFailures {
		return
	}
	status := http.StatusInternalServerError
	if errors.Is(err, os.ErrPermission) || isEscape(err) {
		status = http.StatusForbidden
	}
	d.failed = append(d.failed, deleteFailure{path: p, dir: dir, status: status})
}

// dropMeta deletes the properties, checksums and locks of paths and
// everything below them, in batches of one transaction each.
func (t *posixTree) dropMeta(ctx context.Context, paths []string) error {
	for len(paths) > 0 {
		n := min(len(paths), 256)
		if err := t.h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			for _, p := range paths[:n] {
				if err := t.h.meta.dropTx(tx, t.userID, p); err != nil {
					return err
				}
				if err := dropLocks(tx, t.userID, p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("drop metadata of deleted resources: %w", err)
		}
		paths = paths[n:]
	}
	t.h.locksChanged()
	return nil
}
