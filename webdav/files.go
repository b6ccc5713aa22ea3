package webdav

import (
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

const xmlHeader = `<?xml version="1.0" encoding="utf-8"?>` + "\n"

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
	fc, err := rq.tree.openFile(rq.r.Context(), rq.path)
	if err != nil {
		return statFailure(err)
	}
	defer fc.close()
	fi := fc.info()
	if fi.IsDir() {
		rq.serveListing(fi)
		return 0, nil
	}
	h := rq.w.Header()
	h.Set("ETag", fc.etag())
	h.Set("Content-Type", contentType(fi.Name(), false))
	setActiveContentHeaders(h)
	h.Set("Accept-Ranges", "bytes")
	if err := fc.prepare(rq.r); err != nil {
		if errors.Is(err, errReplaced) {
			return rq.retryGet()
		}
		return 0, err
	}
	http.ServeContent(fc.writer(rq.w, rq.r), rq.r, fi.Name(), fi.ModTime(), fc.body())
	return 0, nil
}

// retryGet serves a GET again once, from the file as it now is: its
// contents were replaced and reclaimed between the lookup and the read.
func (rq *request) retryGet() (int, error) {
	if rq.r.Header.Get("X-Ontoflow-Retried") != "" {
		return refuse(http.StatusServiceUnavailable, "the file is being replaced")
	}
	rq.r.Header.Set("X-Ontoflow-Retried", "1")
	return rq.serveGet()
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
		etag = rq.tree.etag(r.Context(), rq.path, fi)
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
	fi, err := rq.lstat(rq.path)
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
	failed, err := rq.tree.remove(rq.r.Context(), rq.path, fi)
	if err != nil {
		return internal(err)
	}
	if len(failed) == 0 {
		return http.StatusNoContent, nil
	}
	rq.writeDeleteFailures(failed)
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

type deleteFailure struct {
	path   string
	dir    bool
	status int
}

// ---- MKCOL ----

func (rq *request) serveMkcol() (int, error) {
	if rq.r.ContentLength > 0 || (rq.r.ContentLength < 0 && len(rq.r.TransferEncoding) > 0) {
		return refuse(http.StatusUnsupportedMediaType, "MKCOL with a body is not supported")
	}
	if rq.path == "/" {
		return refuse(http.StatusMethodNotAllowed, "the root collection exists")
	}
	if _, err := rq.lstat(rq.path); err == nil {
		return refuse(http.StatusMethodNotAllowed, "resource exists")
	}
	pfi, err := rq.stat(pathParent(rq.path))
	if err != nil || !pfi.IsDir() {
		if err != nil && isEscape(err) {
			return refuse(http.StatusForbidden, "forbidden")
		}
		return refuse(http.StatusConflict, "parent collection does not exist")
	}
	if _, err := rq.precheck(target{path: rq.path, membership: true}); err != nil {
		return 0, err
	}
	if err := rq.tree.mkcol(rq.r.Context(), rq.path, pfi); err != nil {
		if errors.Is(err, errExists) {
			return refuse(http.StatusMethodNotAllowed, "resource exists")
		}
		return statFailure(err)
	}
	rq.w.Header().Set("Location", rq.h.href(rq.path, true))
	return http.StatusCreated, nil
}

// errExists: a resource of that name was created meanwhile.
var errExists = errors.New("a resource of that name exists")
