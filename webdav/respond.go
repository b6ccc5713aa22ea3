package webdav

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// Every method handler returns (status, err) and respond is the one place
// that turns them into the answer, as in golang.org/x/net/webdav:
//
//   - (s, nil), s != 0: success without a body (201, 204, ...); the
//     handler has set its headers (Location, ETag).
//   - (0, nil): the handler wrote a body itself (GET, a 207, LOCK's
//     lockdiscovery), so there is nothing left to write.
//   - (_, *davError): a refusal the client is told about: a text/plain
//     body, or RFC 4918's <D:error> element where the RFC asks for one.
//   - (_, other error): an internal failure, logged and answered 500.

// davError is a refusal with its status and what the client reads.
type davError struct {
	status int
	msg    string // text/plain body (http.Error's form)
	// cond, when set, makes the body RFC 4918's <D:error><D:cond/></D:error>
	// (§16), with href inside the element when that is set too.
	cond string
	href string
}

func (e *davError) Error() string {
	if e.cond != "" {
		return http.StatusText(e.status) + ": " + e.cond
	}
	return e.msg
}

// refuse is a refusal with a text body; handlers return it as
// `return refuse(http.StatusConflict, "...")`.
func refuse(status int, msg string) (int, error) {
	return status, &davError{status: status, msg: msg}
}

// refusal is refuse's error alone, for helpers that return only an error.
func refusal(status int, msg string) error {
	return &davError{status: status, msg: msg}
}

// condError is a refusal whose body is the precondition element cond
// (RFC 4918 §16).
func condError(status int, cond, href string) error {
	return &davError{status: status, cond: cond, href: href}
}

// internal marks err as a server failure (500) with what was being done.
func internal(err error) (int, error) {
	return http.StatusInternalServerError, err
}

// statError classifies a failed stat or open: 404 for a missing resource,
// 403 for a path that would leave the user's tree (symlinks) or may not be
// read, else an internal failure.
func statError(err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return refusal(http.StatusNotFound, "not found")
	case isEscape(err), errors.Is(err, os.ErrPermission), errors.Is(err, syscall.ELOOP):
		return refusal(http.StatusForbidden, "forbidden")
	}
	return err
}

func statFailure(err error) (int, error) {
	err = statError(err)
	var de *davError
	if errors.As(err, &de) {
		return de.status, err
	}
	return internal(err)
}

func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "escapes from parent")
}

// xmlFailure is the refusal of an unreadable XML request body.
func xmlFailure(err error) error {
	if errors.Is(err, errXMLTooLarge) {
		return refusal(http.StatusRequestEntityTooLarge, "xml body too large")
	}
	return refusal(http.StatusBadRequest, "malformed xml body")
}

// respond writes what a handler returned; see the comment at the top.
func (rq *request) respond(status int, err error) {
	w := rq.w
	if err == nil {
		if status != 0 {
			w.WriteHeader(status)
		}
		return
	}
	var de *davError
	if !errors.As(err, &de) && errors.Is(err, contents.ErrStoreUnavailable) {
		rq.h.log.Error("webdav", "method", rq.r.Method, "path", rq.path, "err", err)
		w.Header().Set("Retry-After", "5")
		de = &davError{status: http.StatusServiceUnavailable, msg: "storage unavailable, retry later"}
	}
	if de == nil && !errors.As(err, &de) {
		user := ""
		if rq.user != nil {
			user = rq.user.Username
		}
		rq.h.log.Error("webdav", "user", user, "method", rq.r.Method, "path", rq.path, "err", err)
		de = &davError{status: http.StatusInternalServerError, msg: "internal error"}
	}
	if rw, ok := w.(*respWriter); ok && rw.wrote {
		// The status line is out (a streamed body failed half-way): the
		// client sees a truncated body, the only honest signal left.
		return
	}
	if de.cond == "" {
		http.Error(w, de.msg, de.status)
		return
	}
	var b strings.Builder
	b.WriteString(xmlHeader + `<D:error xmlns:D="DAV:"><D:` + de.cond)
	if de.href == "" {
		b.WriteString(`/></D:error>`)
	} else {
		b.WriteString(`><D:href>`)
		escapeText(&b, de.href)
		b.WriteString(`</D:href></D:` + de.cond + `></D:error>`)
	}
	w.Header().Set("Content-Type", `application/xml; charset="utf-8"`)
	w.WriteHeader(de.status)
	_, _ = io.WriteString(w, b.String())
}
