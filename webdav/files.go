package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

const xmlHeader = `<?xml version="1.0" encoding="utf-8"?>` + "\n"

// etagWith is the strong entity tag of fi given its checksum record (ok:
// one was read): a node's id and version in tree mode, the metadata
// store's shape of inode, mtime, size and generation in POSIX mode
// (identity.go).
func (h *Handler) etagWith(fi fs.FileInfo, rec models.DavChecksum, ok bool) string {
	if n, isNode := fi.(nodeInfo); isNode {
		return nodeETag(n.n)
	}
	return h.meta.etag(fi, rec, ok)
}

// etagAt is the tag of the resource at p, fi its stat. A POSIX file's
// record is read through the file, opened, and the tag is taken from that
// open file's own stat, so record and stat describe one version even if
// p is replaced meanwhile.
func (h *Handler) etagAt(ctx context.Context, root *os.Root, userID, p string, fi fs.FileInfo) string {
	if _, isNode := fi.(nodeInfo); isNode || !fi.Mode().IsRegular() {
		return h.etagWith(fi, models.DavChecksum{}, false)
	}
	f, err := root.Open(rel(p))
	if err != nil {
		return h.etagWith(fi, models.DavChecksum{}, false)
	}
	defer f.Close()
	return h.etagOfOpen(ctx, userID, p, f, fi)
}

// etagOfOpen is the tag of the open file f at p (fi: a stat of p, used if
// f cannot be stat'ed).
func (h *Handler) etagOfOpen(ctx context.Context, userID, p string, f *os.File, fi fs.FileInfo) string {
	if now, err := f.Stat(); err == nil {
		fi = now
	}
	rec, ok, err := h.meta.recordOf(ctx, userID, p, f)
	if err != nil {
		// Without the record the tag ends in the change time: still
		// one no client can reproduce, only less stable.
		h.log.Warn("webdav: read a file's record", "path", p, "err", err)
		ok = false
	}
	return h.etagWith(fi, rec, ok)
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

func (h *Handler) readXML(r *http.Request) (*xmlNode, error) {
	if r.Body == nil || r.ContentLength == 0 {
		return nil, nil
	}
	if r.ContentLength > h.opts.MaxXMLBytes {
		return nil, errXMLTooLarge
	}
	return parseXML(r.Body, h.opts.MaxXMLBytes, h.opts.MaxXMLDepth)
}

// ---- GET / HEAD ----

func (rq *request) serveGet() (int, error) {
	f, err := rq.root.Open(rel(rq.path))
	if err != nil {
		return statFailure(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return internal(fmt.Errorf("stat opened file: %w", err))
	}
	h := rq.w.Header()
	if fi.IsDir() {
		rq.serveListing(f)
		return 0, nil
	}
	if !fi.Mode().IsRegular() {
		return refuse(http.StatusForbidden, "not a regular file")
	}
	h.Set("ETag", rq.h.etagOfOpen(rq.r.Context(), rq.user.ID, rq.path, f, fi))
	h.Set("Content-Type", contentType(fi.Name(), false))
	setActiveContentHeaders(h)
	h.Set("Accept-Ranges", "bytes")
	http.ServeContent(rq.w, rq.r, fi.Name(), fi.ModTime(), f)
	return 0, nil
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

// checkHTTPPreconditions applies If-Match / If-None-Match and
// If-Unmodified-Since (RFC 9110) to a write on the request's path (fi its
// stat): a refusal (412) when one fails. The tag, which costs a POSIX
// file an open, is taken only when a condition names one.
func (rq *request) checkHTTPPreconditions(fi fs.FileInfo, exists bool) error {
	r := rq.r
	etag := ""
	if exists && (r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != "") {
		etag = rq.h.etagAt(r.Context(), rq.root, rq.user.ID, rq.path, fi)
	}
	failed := refusal(http.StatusPreconditionFailed, "precondition failed")
	if im := r.Header.Get("If-Match"); im != "" {
		if !exists || !etagListMatch(im, etag) {
			return failed
		}
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if exists && etagListMatch(inm, etag) {
			return failed
		}
	}
	if ius := r.Header.Get("If-Unmodified-Since"); ius != "" && r.Header.Get("If-Match") == "" && exists {
		if t, err := http.ParseTime(ius); err == nil && fi.ModTime().Truncate(time.Second).After(t) {
			return failed
		}
	}
	return nil
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

func (rq *request) serveDelete() (int, error) {
	if rq.path == "/" {
		return refuse(http.StatusForbidden, "cannot delete the root collection")
	}
	fi, err := rq.root.Lstat(rel(rq.path))
	if err != nil {
		return statFailure(err)
	}
	if fi.IsDir() {
		if d := rq.r.Header.Get("Depth"); d != "" && !strings.EqualFold(d, "infinity") {
			return refuse(http.StatusBadRequest, "DELETE of a collection needs Depth: infinity")
		}
	}
	if err := rq.checkHTTPPreconditions(fi, true); err != nil {
		return http.StatusPreconditionFailed, err
	}
	if _, err := rq.precheck(target{path: rq.path, membership: true, subtree: true}); err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		if err := rq.root.Remove(rel(rq.path)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return internal(fmt.Errorf("remove file: %w", err))
		}
		if err := rq.dropMeta([]string{rq.path}); err != nil {
			return internal(err)
		}
		rq.h.quota.add(rq.user.ID, -fi.Size())
		return http.StatusNoContent, nil
	}
	var d deletion
	done := rq.removeTree(rq.path, &d)
	rq.h.quota.invalidate(rq.user.ID)
	removed := d.removed
	if done {
		removed = []string{rq.path}
	}
	// Whatever was removed loses its properties, checksums and locks,
	// even when some members could not be.
	if err := rq.dropMeta(removed); err != nil {
		return internal(err)
	}
	if done {
		return http.StatusNoContent, nil
	}
	rq.writeDeleteFailures(d.failed)
	return 0, nil
}

// writeDeleteFailures answers RFC 4918 §9.6.1's 207: the members that
// could not be deleted, each with its status (their ancestors stay, and
// are not listed).
func (rq *request) writeDeleteFailures(failed []deleteFailure) {
	var b strings.Builder
	b.WriteString(xmlHeader + `<D:multistatus xmlns:D="DAV:">`)
	for _, f := range failed {
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
				if err := rq.h.meta.dropTx(tx, rq.user.ID, p); err != nil {
					return err
				}
				if err := dropLocks(tx, rq.user.ID, p); err != nil {
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

func (rq *request) serveMkcol() (int, error) {
	if rq.r.ContentLength > 0 || (rq.r.ContentLength < 0 && len(rq.r.TransferEncoding) > 0) {
		return refuse(http.StatusUnsupportedMediaType, "MKCOL with a body is not supported")
	}
	if rq.path == "/" {
		return refuse(http.StatusMethodNotAllowed, "the root collection exists")
	}
	if _, err := rq.root.Lstat(rel(rq.path)); err == nil {
		return refuse(http.StatusMethodNotAllowed, "resource exists")
	}
	pfi, err := rq.root.Stat(rel(pathParent(rq.path)))
	if err != nil || !pfi.IsDir() {
		if err != nil && isEscape(err) {
			return refuse(http.StatusForbidden, "forbidden")
		}
		return refuse(http.StatusConflict, "parent collection does not exist")
	}
	if _, err := rq.precheck(target{path: rq.path, membership: true}); err != nil {
		return 0, err
	}
	if err := rq.root.Mkdir(rel(rq.path), 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return refuse(http.StatusMethodNotAllowed, "resource exists")
		}
		return statFailure(err)
	}
	if err := rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		return rq.h.meta.dropTx(tx, rq.user.ID, rq.path)
	}); err != nil {
		return internal(fmt.Errorf("drop stale metadata: %w", err))
	}
	rq.w.Header().Set("Location", rq.h.href(rq.path, true))
	return http.StatusCreated, nil
}
