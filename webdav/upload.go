package webdav

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// PUT, written once for every storage: the checks (path, size limits,
// conditions, locks), the body's bound by the quota, its admission and
// the answer are here; the storage's putTarget receives and commits it.

// bufPool holds the 1 MiB copy buffers of uploads, copies and hashing.
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
	if size >= 0 && size <= smallUpload && (limit < 0 || size <= limit) {
		// Small bodies: one read, one write, hashes inline; the
		// pipeline's goroutines would cost more than they save.
		return copySmallHashed(f, r, size)
	}
	md, sh := md5.New(), sha1.New()
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
		k, rerr := contents.Fill(r, buf)
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
		if rerr == io.EOF {
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

func (rq *request) servePut() (int, error) {
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
	pt, err := rq.tree.putTarget(rq.r.Context(), rq.path)
	switch {
	case errors.Is(err, errNoParent) && isEscape(err):
		return refuse(http.StatusForbidden, "forbidden")
	case errors.Is(err, errNoParent):
		return refuse(http.StatusConflict, "parent collection does not exist")
	case err != nil:
		return statFailure(err)
	}
	u := &upload{rq: rq, target: pt, quota: rq.h.quota.of(rq.user)}
	defer u.cleanup()
	old, exists := pt.existing()
	if exists && old.IsDir() {
		return refuse(http.StatusMethodNotAllowed, "a collection exists at this path")
	}
	if err := rq.checkHTTPPreconditions(old, exists); err != nil {
		return http.StatusPreconditionFailed, err
	}
	if _, err := rq.precheck(target{path: rq.path, membership: !exists}); err != nil {
		return 0, err
	}
	u.exists = exists
	if exists {
		u.oldSize = old.Size()
	}
	if err := u.run(); err != nil {
		return 0, err
	}
	return rq.answerPut(pt.etag(u), u.mtimeOK, u.exists), nil
}

// upload is one PUT's body on its way from the request into storage
// (run's steps); target holds the storage's side of it.
type upload struct {
	rq      *request
	target  putTarget
	exists  bool // a file is being replaced
	oldSize int64
	quota   int64 // <= 0: unlimited

	limit    int64 // the body's bound (upload limit or room left), -1 none
	limitErr error
	n        int64
	md5sum   string
	sha1sum  string
	mtimeOK  bool // X-OC-Mtime applied
	admitted bool // growth reserved against the quota (settled in cleanup)
	done     bool // committed
}

// run takes the upload through its steps; the first to fail says why.
func (u *upload) run() error {
	if err := u.bound(); err != nil {
		return err
	}
	if err := u.target.receive(u); err != nil {
		return err
	}
	// The body may have taken minutes: a lock another client took
	// meanwhile must not be overwritten by this upload (on SQLite this is
	// the cached answer unless a lock changed).
	if _, err := u.rq.precheck(target{path: u.rq.path, membership: !u.exists}); err != nil {
		return err
	}
	if err := u.admit(); err != nil {
		return err
	}
	return u.target.commit(u)
}

// cleanup has the storage remove what an uncommitted upload left, and
// settles a reservation.
func (u *upload) cleanup() {
	u.target.cleanup(u)
	if u.admitted {
		u.rq.h.quota.settle(u.rq.user.ID, u.n-u.oldSize, u.done)
	}
}

// announced is the size the client says its body has: Content-Length,
// or for a chunked body the X-Expected-Entity-Length macOS Finder sends;
// -1 when neither says. It only lets an upload that cannot fit be refused
// before its body is read: the body's own length is what is stored and
// checked, whatever was announced.
func announced(r *http.Request) int64 {
	if r.ContentLength >= 0 {
		return r.ContentLength
	}
	if n, err := strconv.ParseInt(r.Header.Get("X-Expected-Entity-Length"), 10, 64); err == nil && n >= 0 {
		return n
	}
	return -1
}

// unread answers a PUT refused before its body was read with Connection:
// close: net/http would otherwise read up to 256 KiB of a chunked body
// before it sends the refusal, which the client is still uploading.
func (rq *request) unread() { rq.w.Header().Set("Connection", "close") }

// bound sets the body's limit: the upload limit, or the room the quota
// leaves when smaller (507 at once when Content-Length exceeds it).
func (u *upload) bound() error {
	rq, h := u.rq, u.rq.h
	u.limit, u.limitErr = -1, errTooLarge
	if max := h.opts.MaxUploadBytes; max > 0 {
		u.limit = max
	}
	if u.quota <= 0 {
		return nil
	}
	used, err := h.quota.used(rq.r.Context(), rq.tree, rq.user.ID)
	if err != nil {
		return fmt.Errorf("quota usage: %w", err)
	}
	room := max(u.quota-used+u.oldSize, 0)
	if announced(rq.r) > room {
		rq.unread()
		return refusal(http.StatusInsufficientStorage, "quota exceeded")
	}
	if u.limit < 0 || room < u.limit {
		u.limit, u.limitErr = room, errQuota
	}
	return nil
}

// received judges how the body's copy into storage ended (err), in the
// same words for every storage: aborted says the client's body failed
// (it went away, or sent less), not the storage. Then the length the
// client announced and the checksum it sent must match what arrived.
func (u *upload) received(err error, aborted bool) error {
	rq := u.rq
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
	case errors.Is(err, errTooLarge), errors.As(err, &mbe):
		return refusal(http.StatusRequestEntityTooLarge, "upload too large")
	case errors.Is(err, errQuota):
		return refusal(http.StatusInsufficientStorage, "quota exceeded")
	case aborted:
		// Client went away or the body was cut short: the old content
		// stays in place.
		rq.h.log.Info("webdav upload aborted", "user", rq.user.Username, "path", rq.path, "err", err)
		return refusal(http.StatusBadRequest, "upload incomplete")
	default:
		return fmt.Errorf("store upload: %w", err)
	}
	if rq.r.ContentLength >= 0 && u.n != rq.r.ContentLength {
		return refusal(http.StatusBadRequest, "upload incomplete")
	}
	// ownCloud-style checksum the client sent: verify it.
	if v := rq.r.Header.Get("OC-Checksum"); v != "" && !checksumMatches(v, u.md5sum, u.sha1sum) {
		return refusal(http.StatusBadRequest, "checksum mismatch")
	}
	return nil
}

// admit reserves the upload's growth under the user's usage mutex: the
// quota check in bound let the body in, admission decides, so concurrent
// uploads cannot share one room.
func (u *upload) admit() error {
	if u.quota <= 0 {
		return nil
	}
	ok, err := u.rq.h.quota.admit(u.rq.r.Context(), u.rq.tree, u.rq.user.ID, u.quota, u.n-u.oldSize)
	if err != nil {
		return fmt.Errorf("admit upload: %w", err)
	}
	if !ok {
		return refusal(http.StatusInsufficientStorage, "quota exceeded")
	}
	u.admitted = true
	return nil
}

// answerPut is a PUT's answer: the new version's ETag, whether the
// client's mtime was kept, and 204 for a replaced file or 201 with its
// Location for a new one.
func (rq *request) answerPut(etag string, mtimeOK, exists bool) int {
	hd := rq.w.Header()
	hd.Set("ETag", etag)
	hd.Set("OC-ETag", etag)
	if mtimeOK {
		hd.Set("X-OC-Mtime", "accepted")
	}
	if exists {
		return http.StatusNoContent
	}
	hd.Set("Location", rq.h.href(rq.path, false))
	return http.StatusCreated
}

// errParentMoved: the collection of an upload was moved or removed while
// the body arrived.
var errParentMoved = errors.New("the collection was moved or removed during the upload")

// copySmallHashed copies a body of the announced size (at most
// smallUpload) in one read and one write, hashing it inline.
func copySmallHashed(f *os.File, r io.Reader, size int64) (n int64, md5sum, sha1sum string, err error) {
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
	md, sh := md5.Sum(buf[:k]), sha1.Sum(buf[:k])
	return int64(k), hex.EncodeToString(md[:]), hex.EncodeToString(sh[:]), nil
}

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
