package webdav

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"
)

const xmlHeader = `<?xml version="1.0" encoding="utf-8"?>` + "\n"

// etagOf is a strong entity tag: inode, modification time (ns) and size.
// Every PUT writes a new inode, so two versions never share a tag.
func etagOf(fi fs.FileInfo) string {
	ino := fileID(fi)
	b := make([]byte, 0, 48)
	b = append(b, '"')
	b = strconv.AppendUint(b, ino, 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, fi.Size(), 16)
	b = append(b, '"')
	return string(b)
}

// contentType is derived from the extension only: no file is opened.
func contentType(name string, dir bool) string {
	if dir {
		return "httpd/unix-directory"
	}
	if ext := path.Ext(name); ext != "" {
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return "application/octet-stream"
}

func (rq *request) fail(err error) {
	rq.h.log.Error("webdav", "user", rq.user.Username, "method", rq.r.Method, "path", rq.path, "err", err)
	if rw, ok := rq.w.(*respWriter); ok && rw.wrote {
		return
	}
	http.Error(rq.w, "internal error", http.StatusInternalServerError)
}

// statFail answers a failed stat/open: 404 for missing, 403 for paths that
// would escape the user's tree (symlinks), 500 otherwise.
func (rq *request) statFail(err error) {
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		http.Error(rq.w, "not found", http.StatusNotFound)
	case isEscape(err), errors.Is(err, os.ErrPermission), errors.Is(err, syscall.ELOOP):
		http.Error(rq.w, "forbidden", http.StatusForbidden)
	default:
		rq.fail(err)
	}
}

func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "escapes from parent")
}

func (h *Handler) readXML(r *http.Request) (*xmlNode, error) {
	if r.Body == nil || r.ContentLength == 0 {
		return nil, nil
	}
	if r.ContentLength > h.opts.MaxXMLBytes {
		return nil, errXMLTooLarge
	}
	return parseXML(r.Body, h.opts.MaxXMLBytes, h.opts.MaxXMLDepth)
}

func (rq *request) xmlError(err error) {
	if errors.Is(err, errXMLTooLarge) {
		http.Error(rq.w, "xml body too large", http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(rq.w, "malformed xml body", http.StatusBadRequest)
}

// ---- GET / HEAD ----

func (rq *request) serveGet() {
	f, err := rq.root.Open(rel(rq.path))
	if err != nil {
		rq.statFail(err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		rq.fail(err)
		return
	}
	h := rq.w.Header()
	if fi.IsDir() {
		rq.serveListing(f)
		return
	}
	if !fi.Mode().IsRegular() {
		http.Error(rq.w, "not a regular file", http.StatusForbidden)
		return
	}
	h.Set("ETag", etagOf(fi))
	h.Set("Content-Type", contentType(fi.Name(), false))
	setActiveContentHeaders(h)
	h.Set("Accept-Ranges", "bytes")
	http.ServeContent(rq.w, rq.r, fi.Name(), fi.ModTime(), f)
}

// setActiveContentHeaders makes a user's file inert in a browser: the tree
// is served on the API's origin, so an uploaded .html or .svg that ran
// script there could act with another user's cookies (issue 13 item 10).
// Every file (its type comes from its name, which the uploader chose) is
// served inline under "Content-Security-Policy: sandbox": the browser
// renders it in a unique opaque origin with scripts, forms, plugins and
// popups off, so it reaches no cookie or storage of the API's origin;
// nosniff keeps a browser from guessing a more active type. Inline rather
// than as attachments, so pictures, PDFs and text still open in a browser.
func setActiveContentHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
}

// serveListing writes a minimal HTML index of a collection, streamed.
func (rq *request) serveListing(dir *os.File) {
	w := rq.w
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'")
	if rq.r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	var b strings.Builder
	b.WriteString("<!doctype html><meta charset=utf-8><title>")
	escapeText(&b, rq.path)
	b.WriteString("</title><h1>")
	escapeText(&b, rq.path)
	b.WriteString("</h1><ul>\n")
	_, _ = io.WriteString(w, b.String())
	for {
		ents, err := dir.ReadDir(256)
		b.Reset()
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				continue
			}
			isDir := e.IsDir()
			b.WriteString(`<li><a href="`)
			escapeAttr(&b, rq.h.href(pathJoin(rq.path, e.Name()), isDir))
			b.WriteString(`">`)
			escapeText(&b, e.Name())
			if isDir {
				b.WriteString("/")
			}
			b.WriteString("</a>\n")
		}
		_, _ = io.WriteString(w, b.String())
		if err != nil || len(ents) == 0 {
			break
		}
	}
	_, _ = io.WriteString(w, "</ul>\n")
}

// ---- PUT ----

var bufPool = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

func randName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return tmpPrefix + hex.EncodeToString(b[:])
}

// stage runs fn on chunks in its own goroutine.
type stage struct {
	in   chan []byte
	done chan error
}

func newStage(fn func([]byte) error) *stage {
	s := &stage{in: make(chan []byte), done: make(chan error, 1)}
	go func() {
		for p := range s.in {
			s.done <- fn(p)
		}
	}()
	return s
}

// smallUpload is the largest body copied in one piece (it must fit a
// bufPool buffer).
const smallUpload = 256 << 10

var errTooLarge = errors.New("upload too large")
var errQuota = errors.New("quota exceeded")

// copyHashed copies r to f while computing MD5 and SHA-1. Reading the next
// chunk, writing the current one and the two hashes run concurrently.
// limit < 0 means none; beyond it the copy fails with limitErr.
func copyHashed(f *os.File, r io.Reader, size, limit int64, limitErr error) (n int64, md5sum, sha1sum string, err error) {
	md, sh := md5.New(), sha1.New()
	if size >= 0 && size <= smallUpload && (limit < 0 || size <= limit) {
		// Small bodies: one read, one write, hashes inline; the
		// pipeline's goroutines would cost more than they save.
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		buf := (*bp)[:size+1]
		k, rerr := io.ReadFull(r, buf)
		switch {
		case rerr == io.ErrUnexpectedEOF || rerr == io.EOF:
		case rerr != nil:
			return int64(k), "", "", rerr
		default:
			// More than announced: a broken client or a lie.
			return int64(k), "", "", io.ErrUnexpectedEOF
		}
		if _, err := f.Write(buf[:k]); err != nil {
			return int64(k), "", "", err
		}
		md.Write(buf[:k])
		sh.Write(buf[:k])
		return int64(k), hex.EncodeToString(md.Sum(nil)), hex.EncodeToString(sh.Sum(nil)), nil
	}
	stages := []*stage{
		newStage(func(p []byte) error { _, err := f.Write(p); return err }),
		newStage(func(p []byte) error { md.Write(p); return nil }),
		newStage(func(p []byte) error { sh.Write(p); return nil }),
	}
	defer func() {
		for _, s := range stages {
			close(s.in)
		}
	}()
	b1 := bufPool.Get().(*[]byte)
	b2 := bufPool.Get().(*[]byte)
	defer bufPool.Put(b1)
	defer bufPool.Put(b2)
	bufs := [2][]byte{*b1, *b2}
	pending := false
	wait := func() error {
		var first error
		for _, s := range stages {
			if e := <-s.done; e != nil && first == nil {
				first = e
			}
		}
		pending = false
		return first
	}
	for i := 0; ; i++ {
		buf := bufs[i%2]
		k, rerr := io.ReadFull(r, buf)
		if pending {
			if werr := wait(); werr != nil {
				return n, "", "", werr
			}
		}
		if k > 0 {
			n += int64(k)
			if limit >= 0 && n > limit {
				return n, "", "", limitErr
			}
			for _, s := range stages {
				s.in <- buf[:k]
			}
			pending = true
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			if pending {
				wait()
			}
			return n, "", "", rerr
		}
	}
	if pending {
		if werr := wait(); werr != nil {
			return n, "", "", werr
		}
	}
	return n, hex.EncodeToString(md.Sum(nil)), hex.EncodeToString(sh.Sum(nil)), nil
}

func (rq *request) servePut() {
	h := rq.h
	if rq.path == "/" {
		http.Error(rq.w, "cannot PUT to the root collection", http.StatusMethodNotAllowed)
		return
	}
	if rq.r.Header.Get("Content-Range") != "" {
		http.Error(rq.w, "partial PUT is not supported", http.StatusBadRequest)
		return
	}
	if max := h.opts.MaxUploadBytes; max > 0 && rq.r.ContentLength > max {
		http.Error(rq.w, "upload too large", http.StatusRequestEntityTooLarge)
		return
	}
	// The checks and the staging happen in the parent directory, opened
	// once, so each is one system call on a single name; the final rename
	// goes by path (publish).
	dir, err := rq.openParent(rq.path)
	if err != nil {
		if isEscape(err) {
			http.Error(rq.w, "forbidden", http.StatusForbidden)
			return
		}
		http.Error(rq.w, "parent collection does not exist", http.StatusConflict)
		return
	}
	defer rq.closeParent(dir)
	old, err := dir.Stat(pathBase(rq.path))
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		rq.statFail(err)
		return
	}
	if exists && old.IsDir() {
		http.Error(rq.w, "a collection exists at this path", http.StatusMethodNotAllowed)
		return
	}
	if !checkHTTPPreconditions(rq.w, rq.r, old, exists) {
		return
	}
	if rq.precheck(target{path: rq.path, membership: !exists}) == nil {
		return
	}
	u := &upload{rq: rq, dir: dir, exists: exists, quota: h.quotaOf(rq.user)}
	if exists {
		u.oldSize = old.Size()
	}
	defer u.cleanup()
	if !u.bound() || !u.receive() || !u.seal() {
		return
	}
	// The body may have taken minutes: a lock another client took
	// meanwhile must not be overwritten by this upload (on SQLite this is
	// the cached answer unless a lock changed).
	if rq.precheck(target{path: rq.path, membership: !exists}) == nil {
		return
	}
	if !u.admit() || !u.commit() {
		return
	}
	u.answer()
}

// upload is one PUT's body on its way from the request into a temporary
// file beside the target and, renamed, over it (servePut's steps). Each
// step answers the client itself when it fails and reports false.
type upload struct {
	rq      *request
	dir     *os.Root // the target's parent
	exists  bool     // a file is being replaced
	oldSize int64
	quota   int64 // <= 0: unlimited

	limit    int64 // the body's bound (upload limit or room left), -1 none
	limitErr error
	tmp      string
	f        *os.File
	inline   bool // hashed while it streamed
	n        int64
	md5sum   string
	sha1sum  string
	fi       fs.FileInfo // the temporary, as it will be published
	sum      *models.DavChecksum
	mtimeOK  bool // X-OC-Mtime applied
	admitted bool // growth reserved against the quota (settled in cleanup)
	done     bool // renamed into place
}

// cleanup removes an unpublished temporary and settles a reservation.
func (u *upload) cleanup() {
	if u.f != nil && !u.done {
		u.f.Close()
		u.dir.Remove(u.tmp)
	}
	if u.admitted {
		u.rq.h.settle(u.rq.user.ID, u.n-u.oldSize, u.done)
	}
}

// bound sets the body's limit: the upload limit, or the room the quota
// leaves when smaller (507 at once when Content-Length exceeds it).
func (u *upload) bound() bool {
	rq, h := u.rq, u.rq.h
	u.limit, u.limitErr = -1, errTooLarge
	if max := h.opts.MaxUploadBytes; max > 0 {
		u.limit = max
	}
	if u.quota <= 0 {
		return true
	}
	used, err := h.usedBytes(rq.root, rq.user.ID)
	if err != nil {
		rq.fail(err)
		return false
	}
	room := max(u.quota-used+u.oldSize, 0)
	if rq.r.ContentLength > room {
		http.Error(rq.w, "quota exceeded", http.StatusInsufficientStorage)
		return false
	}
	if u.limit < 0 || room < u.limit {
		u.limit, u.limitErr = room, errQuota
	}
	return true
}

// receive streams the body into a new temporary file.
func (u *upload) receive() bool {
	rq := u.rq
	u.tmp = randName()
	f, err := u.dir.OpenFile(u.tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		rq.fail(err)
		return false
	}
	u.f = f
	// Small bodies, and uploads whose checksum the client wants verified,
	// are hashed as they arrive. Large ones are hashed after the answer
	// (hashLater): MD5 alone runs at ~550 MiB/s on a core, which would
	// otherwise bound every big upload; until the hash is recorded the
	// file simply publishes no checksum.
	u.inline = rq.r.Header.Get("OC-Checksum") != "" || (rq.r.ContentLength >= 0 && rq.r.ContentLength <= smallUpload)
	if u.inline {
		u.n, u.md5sum, u.sha1sum, err = copyHashed(f, rq.r.Body, rq.r.ContentLength, u.limit, u.limitErr)
	} else {
		u.n, err = copyLimited(f, rq.r.Body, u.limit, u.limitErr)
	}
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
	case errors.Is(err, errTooLarge), errors.As(err, &mbe):
		http.Error(rq.w, "upload too large", http.StatusRequestEntityTooLarge)
		return false
	case errors.Is(err, errQuota):
		http.Error(rq.w, "quota exceeded", http.StatusInsufficientStorage)
		return false
	default:
		// Client went away or the body was cut short: the old content
		// stays in place.
		rq.h.log.Info("webdav upload aborted", "user", rq.user.Username, "path", rq.path, "err", err)
		http.Error(rq.w, "upload incomplete", http.StatusBadRequest)
		return false
	}
	if rq.r.ContentLength >= 0 && u.n != rq.r.ContentLength {
		http.Error(rq.w, "upload incomplete", http.StatusBadRequest)
		return false
	}
	// ownCloud-style checksum the client sent: verify it.
	if v := rq.r.Header.Get("OC-Checksum"); v != "" && !checksumMatches(v, u.md5sum, u.sha1sum) {
		http.Error(rq.w, "checksum mismatch", http.StatusBadRequest)
		return false
	}
	return true
}

// seal sets the temporary's modification time (X-OC-Mtime) and checksum
// attribute, flushes it when asked, and closes it.
func (u *upload) seal() bool {
	rq, h := u.rq, u.rq.h
	if v := rq.r.Header.Get("X-OC-Mtime"); v != "" {
		if t, ok := parseMtime(v); ok && u.dir.Chtimes(u.tmp, t, t) == nil {
			u.mtimeOK = true
		}
	}
	// The rename keeps inode, size and modification time, so this is
	// what the published file reports.
	fi, err := u.f.Stat()
	if err != nil {
		rq.fail(err)
		return false
	}
	u.fi = fi
	if u.inline {
		u.sum = &models.DavChecksum{
			UserID: rq.user.ID, Path: rq.path, Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano(),
			SHA1: u.sha1sum, MD5: u.md5sum,
		}
		if h.xattrSums {
			if err := setSum(u.f, *u.sum); err != nil {
				// The upload matters more than its checksum: the
				// file publishes none and is hashed again later.
				h.log.Warn("webdav checksum", "user", rq.user.Username, "path", rq.path, "err", err)
			}
		}
	}
	if h.opts.Fsync {
		if err := u.f.Sync(); err != nil {
			rq.fail(fmt.Errorf("flush upload: %w", err))
			return false
		}
	}
	if err := u.f.Close(); err != nil {
		rq.fail(err)
		return false
	}
	return true
}

// admit reserves the upload's growth under the user's usage mutex: the
// quota check in bound let the body in, admission decides, so concurrent
// uploads cannot share one room.
func (u *upload) admit() bool {
	if u.quota <= 0 {
		return true
	}
	ok, err := u.rq.h.admit(u.rq.root, u.rq.user.ID, u.quota, u.n-u.oldSize)
	if err != nil {
		u.rq.fail(err)
		return false
	}
	if !ok {
		http.Error(u.rq.w, "quota exceeded", http.StatusInsufficientStorage)
		return false
	}
	u.admitted = true
	return true
}

// commit renames the temporary over the target and records what the
// checksum store needs.
func (u *upload) commit() bool {
	rq, h, ctx := u.rq, u.rq.h, u.rq.r.Context()
	if h.xattrSums {
		// Nothing else to record: the checksum travels with the file.
		if !u.exists {
			if err := h.dropStaleProps(ctx, rq.user.ID, rq.path); err != nil {
				rq.fail(err)
				return false
			}
		}
		if err := rq.publish(u.tmp); err != nil {
			rq.publishFail(err)
			return false
		}
		u.done = true
	} else {
		// The database record must follow the renames in their order.
		mu := h.lockStripe(rq.user.ID, rq.path)
		mu.Lock()
		err := rq.publish(u.tmp)
		if err == nil {
			u.done = true
			err = h.commitPut(ctx, &putMeta{userID: rq.user.ID, path: rq.path, created: !u.exists, sum: u.sum})
		}
		mu.Unlock()
		if err != nil {
			rq.publishFail(err)
			return false
		}
	}
	if !u.admitted {
		h.addUsage(rq.user.ID, u.n-u.oldSize)
	}
	if h.opts.Fsync {
		// The rename is durable once the directory is.
		if err := syncDir(u.dir); err != nil {
			rq.fail(fmt.Errorf("flush directory: %w", err))
			return false
		}
	}
	if !u.inline {
		h.hashLater(rq.user.ID, rq.path)
	}
	return true
}

// answer writes 201 or 204 with the new ETag.
func (u *upload) answer() {
	rq := u.rq
	hd := rq.w.Header()
	etag := etagOf(u.fi)
	hd.Set("ETag", etag)
	hd.Set("OC-ETag", etag)
	if u.mtimeOK {
		hd.Set("X-OC-Mtime", "accepted")
	}
	if u.exists {
		rq.w.WriteHeader(http.StatusNoContent)
	} else {
		hd.Set("Location", rq.h.href(rq.path, false))
		rq.w.WriteHeader(http.StatusCreated)
	}
}

// errParentMoved: the collection of an upload was moved or removed while
// the body arrived.
var errParentMoved = errors.New("the collection was moved or removed during the upload")

// publish renames the finished upload tmp (in the parent opened at the
// start) over the request's path. The rename goes by path, not through
// dir: if the collection was moved meanwhile, the file must not land at
// the new place, which the request's lock checks never covered.
func (rq *request) publish(tmp string) error {
	err := rq.root.Rename(rel(pathJoin(pathParent(rq.path), tmp)), rel(rq.path))
	if errors.Is(err, fs.ErrNotExist) {
		return errParentMoved
	}
	return err
}

func (rq *request) publishFail(err error) {
	if errors.Is(err, errParentMoved) {
		http.Error(rq.w, err.Error(), http.StatusConflict)
		return
	}
	rq.fail(err)
}

// openParent opens the collection holding p as a root of its own (the
// user's root itself for a top-level name).
func (rq *request) openParent(p string) (*os.Root, error) {
	parent := pathParent(p)
	if parent == "/" {
		return rq.root, nil
	}
	return rq.root.OpenRoot(rel(parent))
}

func (rq *request) closeParent(dir *os.Root) {
	if dir != rq.root {
		dir.Close()
	}
}

// maxHashQueue caps the files waiting for background hashing.
const maxHashQueue = 1024

// copyLimited copies r to f through a pooled buffer; limit < 0 means
// none, beyond it the copy fails with limitErr.
func copyLimited(f *os.File, r io.Reader, limit int64, limitErr error) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	src := r
	if limit >= 0 {
		src = io.LimitReader(r, limit+1)
	}
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, struct{ io.Reader }{src}, *bp)
	if err != nil {
		return n, err
	}
	if limit >= 0 && n > limit {
		return n, limitErr
	}
	return n, nil
}

// hashLater records the MD5 and SHA-1 of a file in the background, one
// file at a time so hashing never takes more than one core. The sums are
// stored only if the file is unchanged (inode, size, mtime) after hashing.
// PROPFIND requests for checksums call it for files that have none, so
// uploads whose job was lost (restart, another replica) get hashed too.
func (h *Handler) hashLater(userID, p string) {
	// Bound the backlog: a PROPFIND over a huge folder of files put
	// there out of band must not queue a goroutine per file. What is
	// dropped is queued again by a later PROPFIND.
	if h.hashQueued.Load() >= maxHashQueue {
		return
	}
	key := userID + "\x00" + p
	if _, busy := h.hashing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	h.hashQueued.Add(1)
	go func() {
		defer h.hashQueued.Add(-1)
		defer h.hashing.Delete(key)
		h.hashSem <- struct{}{}
		defer func() { <-h.hashSem }()
		if err := h.hashFile(context.Background(), userID, p); err != nil {
			h.log.Warn("webdav checksum", "user_id", userID, "path", p, "err", err)
		}
	}()
}

func (h *Handler) hashFile(ctx context.Context, userID, p string) error {
	root, err := h.openRoot(userID)
	if err != nil {
		return fmt.Errorf("open user root: %w", err)
	}
	defer root.Close()
	f, err := root.Open(rel(p))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil || !before.Mode().IsRegular() {
		return err
	}
	md, sh := md5.New(), sha1.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	if _, err := io.CopyBuffer(io.MultiWriter(md, sh), struct{ io.Reader }{f}, *bp); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	sum := models.DavChecksum{
		UserID: userID, Path: p, Size: before.Size(), MtimeNs: before.ModTime().UnixNano(),
		SHA1: hex.EncodeToString(sh.Sum(nil)), MD5: hex.EncodeToString(md.Sum(nil)),
	}
	if h.xattrSums {
		// On the very inode that was read: if the path was replaced
		// meanwhile, the attribute goes with the old file, harmlessly.
		now, err := f.Stat()
		if err != nil || etagOf(now) != etagOf(before) {
			return nil
		}
		if err := setSum(f, sum); err != nil {
			// E.g. a read-only file put there out of band: setting an
			// attribute needs write permission on it. Do not read it
			// all again on every PROPFIND while it stays the same.
			h.markUnhashable(userID, p, before)
			return err
		}
		return nil
	}
	now, err := root.Stat(rel(p))
	if err != nil || etagOf(now) != etagOf(before) {
		// Replaced or changed meanwhile: its own upload records it.
		return nil
	}
	return h.db.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&sum).Error
}

// maxUnhashable bounds the remembered files whose checksum could not be
// recorded; beyond it the memory is dropped and they are tried again.
const maxUnhashable = 10000

// markUnhashable remembers that this version of p (its ETag) could not
// take a checksum attribute.
func (h *Handler) markUnhashable(userID, p string, fi fs.FileInfo) {
	if h.unhashableN.Add(1) > maxUnhashable {
		h.unhashableSet.Clear()
		h.unhashableN.Store(1)
	}
	h.unhashableSet.Store(userID+"\x00"+p, etagOf(fi))
}

// unhashable reports whether this version of p already failed to take a
// checksum.
func (h *Handler) unhashable(userID, p string, fi fs.FileInfo) bool {
	v, ok := h.unhashableSet.Load(userID + "\x00" + p)
	return ok && v.(string) == etagOf(fi)
}

// parseMtime reads a Unix time in seconds (possibly fractional).
func parseMtime(v string) (time.Time, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f > 1e11 {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true
}

// checksumMatches checks an "SHA1:hex MD5:hex" style header.
func checksumMatches(v, md5sum, sha1sum string) bool {
	for _, part := range strings.Fields(v) {
		typ, sum, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		switch strings.ToUpper(typ) {
		case "MD5":
			if !strings.EqualFold(sum, md5sum) {
				return false
			}
		case "SHA1":
			if !strings.EqualFold(sum, sha1sum) {
				return false
			}
		}
	}
	return true
}

// checkHTTPPreconditions applies If-Match / If-None-Match (RFC 9110) to a
// write; on failure it answers 412 and returns false.
func checkHTTPPreconditions(w http.ResponseWriter, r *http.Request, fi fs.FileInfo, exists bool) bool {
	etag := ""
	if exists {
		etag = etagOf(fi)
	}
	if im := r.Header.Get("If-Match"); im != "" {
		if !exists || !etagListMatch(im, etag) {
			http.Error(w, "precondition failed", http.StatusPreconditionFailed)
			return false
		}
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if exists && etagListMatch(inm, etag) {
			http.Error(w, "precondition failed", http.StatusPreconditionFailed)
			return false
		}
	}
	if ius := r.Header.Get("If-Unmodified-Since"); ius != "" && r.Header.Get("If-Match") == "" && exists {
		if t, err := http.ParseTime(ius); err == nil && fi.ModTime().Truncate(time.Second).After(t) {
			http.Error(w, "precondition failed", http.StatusPreconditionFailed)
			return false
		}
	}
	return true
}

func etagListMatch(list, etag string) bool {
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "*" {
			return true
		}
		if e != "" && e == etag {
			return true
		}
	}
	return false
}

// ---- DELETE ----

func (rq *request) serveDelete() {
	if rq.path == "/" {
		http.Error(rq.w, "cannot delete the root collection", http.StatusForbidden)
		return
	}
	fi, err := rq.root.Lstat(rel(rq.path))
	if err != nil {
		rq.statFail(err)
		return
	}
	if fi.IsDir() {
		if d := rq.r.Header.Get("Depth"); d != "" && !strings.EqualFold(d, "infinity") {
			http.Error(rq.w, "DELETE of a collection needs Depth: infinity", http.StatusBadRequest)
			return
		}
	}
	if !checkHTTPPreconditions(rq.w, rq.r, fi, true) {
		return
	}
	if rq.precheck(target{path: rq.path, membership: true, subtree: true}) == nil {
		return
	}
	if !fi.IsDir() {
		err = rq.root.Remove(rel(rq.path))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			rq.fail(err)
			return
		}
		if err := rq.dropMeta([]string{rq.path}); err != nil {
			rq.fail(err)
			return
		}
		rq.h.addUsage(rq.user.ID, -fi.Size())
		rq.w.WriteHeader(http.StatusNoContent)
		return
	}
	var d deletion
	done := rq.removeTree(rq.path, &d)
	rq.h.invalidateUsage(rq.user.ID)
	removed := d.removed
	if done {
		removed = []string{rq.path}
	}
	// Whatever was removed loses its properties, checksums and locks,
	// even when some members could not be.
	if err := rq.dropMeta(removed); err != nil {
		rq.fail(err)
		return
	}
	if done {
		rq.w.WriteHeader(http.StatusNoContent)
		return
	}
	// RFC 4918 §9.6.1: the members that could not be deleted, each with
	// its status (their ancestors stay, and are not listed).
	var b strings.Builder
	b.WriteString(xmlHeader + `<D:multistatus xmlns:D="DAV:">`)
	for _, f := range d.failed {
		b.WriteString(`<D:response><D:href>`)
		escapeText(&b, rq.h.href(f.path, f.dir))
		b.WriteString(`</D:href><D:status>` + statusLine(f.status) + `</D:status></D:response>`)
	}
	b.WriteString(`</D:multistatus>`)
	rq.w.Header().Set("Content-Type", `application/xml; charset="utf-8"`)
	rq.w.WriteHeader(http.StatusMultiStatus)
	_, _ = io.WriteString(rq.w, b.String())
}

// deletion collects what a collection's DELETE removed (only the members
// of collections that could not be removed whole) and what it could not.
type deletion struct {
	removed []string
	failed  []deleteFailure
}

type deleteFailure struct {
	path   string
	dir    bool
	status int
}

// maxDeleteFailures bounds the members a 207 lists.
const maxDeleteFailures = 1000

// removeTree removes collection p and everything in it, depth first, and
// reports whether p itself is gone.
func (rq *request) removeTree(p string, d *deletion) bool {
	dir, err := rq.root.Open(rel(p))
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
				ok = rq.removeTree(child, d)
			} else if err := rq.root.Remove(rel(child)); err == nil || errors.Is(err, os.ErrNotExist) {
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
		err := rq.root.Remove(rel(p))
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
func (rq *request) dropMeta(paths []string) error {
	for len(paths) > 0 {
		n := min(len(paths), 256)
		if err := rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
			for _, p := range paths[:n] {
				if err := deleteMeta(tx, rq.user.ID, p, true); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("drop metadata of deleted resources: %w", err)
		}
		paths = paths[n:]
	}
	rq.h.locksChanged()
	return nil
}

// ---- MKCOL ----

func (rq *request) serveMkcol() {
	if rq.r.ContentLength > 0 || (rq.r.ContentLength < 0 && len(rq.r.TransferEncoding) > 0) {
		http.Error(rq.w, "MKCOL with a body is not supported", http.StatusUnsupportedMediaType)
		return
	}
	if rq.path == "/" {
		http.Error(rq.w, "the root collection exists", http.StatusMethodNotAllowed)
		return
	}
	if _, err := rq.root.Lstat(rel(rq.path)); err == nil {
		http.Error(rq.w, "resource exists", http.StatusMethodNotAllowed)
		return
	}
	pfi, err := rq.root.Stat(rel(pathParent(rq.path)))
	if err != nil || !pfi.IsDir() {
		if err != nil && isEscape(err) {
			http.Error(rq.w, "forbidden", http.StatusForbidden)
			return
		}
		http.Error(rq.w, "parent collection does not exist", http.StatusConflict)
		return
	}
	if rq.precheck(target{path: rq.path, membership: true}) == nil {
		return
	}
	if err := rq.root.Mkdir(rel(rq.path), 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			http.Error(rq.w, "resource exists", http.StatusMethodNotAllowed)
			return
		}
		rq.statFail(err)
		return
	}
	if err := rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		return deleteMeta(tx, rq.user.ID, rq.path, false)
	}); err != nil {
		rq.fail(err)
		return
	}
	rq.w.Header().Set("Location", rq.h.href(rq.path, true))
	rq.w.WriteHeader(http.StatusCreated)
}

// ---- COPY / MOVE ----

func (rq *request) serveCopyMove() {
	move := rq.r.Method == "MOVE"
	dst, infinite, overwrite, ok := rq.copyMoveHeaders(move)
	if !ok {
		return
	}
	sfi, err := rq.root.Stat(rel(rq.path))
	if err != nil {
		rq.statFail(err)
		return
	}
	dfi, dexists, ok := rq.checkCopyMoveTarget(dst, sfi, overwrite)
	if !ok {
		return
	}
	targets := []target{{path: dst, membership: true, subtree: true}}
	if move {
		targets = append(targets, target{path: rq.path, membership: true, subtree: true})
	}
	if rq.precheck(targets...) == nil {
		return
	}
	if !move {
		ok, settle := rq.admitCopy(dst, sfi, dfi, dexists, infinite)
		if !ok {
			return
		}
		defer settle()
	}
	// A file replacing a file is renamed over it (MOVE, and COPY through
	// its temporary file), so a failed transfer leaves the old destination
	// whole; anything involving a collection deletes the destination first.
	replace := dexists && !dfi.IsDir() && !sfi.IsDir()
	if dexists && !replace {
		if err := rq.clearDestination(dst); err != nil {
			rq.fail(err)
			return
		}
	}
	if move {
		err = rq.moveTo(dst, !dexists || replace)
	} else {
		err = rq.copyTo(dst, sfi, infinite, !dexists || replace)
	}
	if err != nil {
		rq.fail(err)
		return
	}
	if dexists {
		rq.w.WriteHeader(http.StatusNoContent)
	} else {
		rq.w.Header().Set("Location", rq.h.href(dst, sfi.IsDir()))
		rq.w.WriteHeader(http.StatusCreated)
	}
}

// copyMoveHeaders reads Destination, Depth and Overwrite; on bad input it
// answers and reports false.
func (rq *request) copyMoveHeaders(move bool) (dst string, infinite, overwrite, ok bool) {
	h := rq.h
	dh := rq.r.Header.Get("Destination")
	if dh == "" {
		http.Error(rq.w, "missing Destination", http.StatusBadRequest)
		return "", false, false, false
	}
	u, err := url.Parse(dh)
	if err != nil || u.RawQuery != "" || u.ForceQuery || strings.Contains(dh, "#") {
		// A raw '?' or '#' would cut the name short and aim the MOVE or
		// COPY at another resource (an existing parent, say, which
		// Overwrite: T would then delete); clients percent-encode them.
		http.Error(rq.w, "malformed Destination (a '?' or '#' in a name must be percent-encoded)", http.StatusBadRequest)
		return "", false, false, false
	}
	if u.Host != "" && !strings.EqualFold(u.Host, rq.r.Host) {
		http.Error(rq.w, "Destination is on another server", http.StatusBadGateway)
		return "", false, false, false
	}
	if u.Path != h.opts.Prefix && !strings.HasPrefix(u.Path, h.opts.Prefix+"/") {
		http.Error(rq.w, "Destination is outside the WebDAV tree", http.StatusForbidden)
		return "", false, false, false
	}
	dst, ok = h.internalPath(u.Path)
	if !ok {
		http.Error(rq.w, "invalid Destination", http.StatusBadRequest)
		return "", false, false, false
	}
	if isReserved(dst) || dst == "/" || rq.path == "/" {
		http.Error(rq.w, "forbidden", http.StatusForbidden)
		return "", false, false, false
	}
	infinite = true
	switch d := rq.r.Header.Get("Depth"); {
	case d == "" || strings.EqualFold(d, "infinity"):
	case d == "0" && !move:
		infinite = false
	default:
		http.Error(rq.w, "invalid Depth", http.StatusBadRequest)
		return "", false, false, false
	}
	overwrite = true
	switch rq.r.Header.Get("Overwrite") {
	case "", "T", "t":
	case "F", "f":
		overwrite = false
	default:
		http.Error(rq.w, "invalid Overwrite", http.StatusBadRequest)
		return "", false, false, false
	}
	return dst, infinite, overwrite, true
}

// checkCopyMoveTarget refuses destinations the source cannot go to and
// stats the destination; on refusal it answers and reports false.
func (rq *request) checkCopyMoveTarget(dst string, sfi fs.FileInfo, overwrite bool) (dfi fs.FileInfo, dexists, ok bool) {
	if dst == rq.path {
		http.Error(rq.w, "source and destination are the same", http.StatusForbidden)
		return nil, false, false
	}
	if sfi.IsDir() && isUnder(dst, rq.path) {
		http.Error(rq.w, "destination is inside the source", http.StatusForbidden)
		return nil, false, false
	}
	if isUnder(rq.path, dst) {
		// Overwriting an ancestor would delete the source with it.
		http.Error(rq.w, "destination contains the source", http.StatusForbidden)
		return nil, false, false
	}
	pfi, err := rq.root.Stat(rel(pathParent(dst)))
	if err != nil || !pfi.IsDir() {
		http.Error(rq.w, "destination parent does not exist", http.StatusConflict)
		return nil, false, false
	}
	dfi, err = rq.root.Lstat(rel(dst))
	dexists = err == nil
	if dexists && !overwrite {
		http.Error(rq.w, "destination exists", http.StatusPreconditionFailed)
		return nil, false, false
	}
	return dfi, dexists, true
}

// clearDestination deletes a destination a collection is involved in,
// with its metadata and the locks rooted below it; locks rooted at dst
// stay and cover what replaces it (RFC 4918 §7.5, §9.8.4, §9.9.3).
func (rq *request) clearDestination(dst string) error {
	if err := rq.root.RemoveAll(rel(dst)); err != nil {
		return err
	}
	err := rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if err := deleteMeta(tx, rq.user.ID, dst, false); err != nil {
			return err
		}
		return dropLocksBelow(tx, rq.user.ID, dst)
	})
	rq.h.locksChanged()
	return err
}

// moveTo renames the source to dst and moves its metadata; clearStale
// first drops rows left at dst (a name that did not exist, or the replaced
// file's properties and checksum; locks rooted at dst stay).
func (rq *request) moveTo(dst string, clearStale bool) error {
	if err := rq.root.Rename(rel(rq.path), rel(dst)); err != nil {
		return err
	}
	err := rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if clearStale {
			if err := deleteMeta(tx, rq.user.ID, dst, false); err != nil {
				return err
			}
		}
		return moveMeta(tx, rq.user.ID, rq.path, dst)
	})
	rq.h.locksChanged()
	return err
}

// copyTo copies the source to dst with its metadata (not its locks).
func (rq *request) copyTo(dst string, sfi fs.FileInfo, infinite, clearStale bool) error {
	defer rq.h.invalidateUsage(rq.user.ID)
	var err error
	if sfi.IsDir() {
		err = rq.copyTree(rq.path, dst, infinite)
	} else {
		err = rq.copyFile(rq.path, dst, sfi)
	}
	if err != nil {
		return err
	}
	err = rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if clearStale {
			if err := deleteMeta(tx, rq.user.ID, dst, false); err != nil {
				return err
			}
		}
		return copyMeta(tx, rq.user.ID, rq.path, dst, infinite)
	})
	rq.h.propsWritten()
	return err
}

// admitCopy reserves a COPY's growth of the tree (the source's size less
// the replaced destination's) against the user's quota; when it does not
// fit it answers 507 and reports false. settle ends the reservation.
func (rq *request) admitCopy(dst string, sfi, dfi fs.FileInfo, dexists, infinite bool) (ok bool, settle func()) {
	h := rq.h
	quota := h.quotaOf(rq.user)
	if quota <= 0 {
		return true, func() {}
	}
	size := func(p string, fi fs.FileInfo, deep bool) (int64, error) {
		switch {
		case !fi.IsDir():
			return fi.Size(), nil
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
	if err == nil {
		ok, err = h.admit(rq.root, rq.user.ID, quota, grow)
	}
	if err != nil {
		rq.fail(err)
		return false, nil
	}
	if !ok {
		http.Error(rq.w, "quota exceeded", http.StatusInsufficientStorage)
		return false, nil
	}
	// The copy invalidates the cached usage whatever happens; only the
	// reservation is left to release.
	return true, func() { h.settle(rq.user.ID, grow, false) }
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
	if err == nil && rq.h.xattrSums {
		// Same content, size and modification time: the checksum holds.
		if s, ok := getSum(in); ok && sumValid(s, fi) {
			err = setSum(out, s)
		}
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
