package webdav

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// ifCondition is one condition of an If header list.
type ifCondition struct {
	Not   bool
	Token string // state token (Coded-URL content), or ""
	ETag  string // entity tag including quotes, or ""
}

// ifList is one parenthesised list, optionally tagged with a resource.
type ifList struct {
	Tag   string // resource tag URL, "" for untagged
	Conds []ifCondition
}

var errBadIf = errors.New("malformed If header")

// parseIf parses an RFC 4918 §10.4 If header.
func parseIf(s string) ([]ifList, error) {
	var (
		out    []ifList
		tag    string
		tagged = -1 // -1 unknown, 0 untagged form, 1 tagged form
	)
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			break
		}
		switch s[i] {
		case '<':
			if tagged == 0 {
				return nil, errBadIf
			}
			tagged = 1
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return nil, errBadIf
			}
			tag = s[i+1 : i+j]
			i += j + 1
			skip()
			if i >= len(s) || s[i] != '(' {
				return nil, errBadIf
			}
		case '(':
			if tagged == -1 {
				tagged = 0
			}
			i++
			l := ifList{Tag: tag}
			for {
				skip()
				if i >= len(s) {
					return nil, errBadIf
				}
				if s[i] == ')' {
					i++
					break
				}
				c, next, err := parseIfCondition(s, i)
				if err != nil {
					return nil, err
				}
				i = next
				l.Conds = append(l.Conds, c)
			}
			if len(l.Conds) == 0 {
				return nil, errBadIf
			}
			out = append(out, l)
		default:
			return nil, errBadIf
		}
	}
	if len(out) == 0 {
		return nil, errBadIf
	}
	return out, nil
}

// parseIfCondition reads the condition starting at s[i] ("Not"
// optionally, then a <state-token> or an [entity-tag]) and returns the
// index after it.
func parseIfCondition(s string, i int) (ifCondition, int, error) {
	c := ifCondition{}
	if strings.HasPrefix(s[i:], "Not") || strings.HasPrefix(s[i:], "not") || strings.HasPrefix(s[i:], "NOT") {
		c.Not = true
		i += 3
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
			i++
		}
	}
	if i >= len(s) {
		return c, i, errBadIf
	}
	var end byte
	switch s[i] {
	case '<':
		end = '>'
	case '[':
		end = ']'
	default:
		return c, i, errBadIf
	}
	j := strings.IndexByte(s[i:], end)
	if j < 0 {
		return c, i, errBadIf
	}
	if end == '>' {
		c.Token = s[i+1 : i+j]
	} else {
		c.ETag = s[i+1 : i+j]
	}
	if c.Token == "" && c.ETag == "" {
		return c, i, errBadIf
	}
	return c, i + j + 1, nil
}

// target is a resource a write touches.
type target struct {
	path       string
	membership bool // the parent collection's membership changes
	subtree    bool // everything below path is affected too
}

// preconds holds what precheck learned, for the method to use.
type preconds struct {
	locks  []models.DavLock
	ifs    []ifList
	tokens map[string]bool
}

// covers reports whether lock l applies to path p.
func covers(l *models.DavLock, p string) bool {
	if l.Path == p {
		return true
	}
	return l.Infinite && isUnder(p, l.Path)
}

// precheck evaluates the If header and the locks for a write to targets:
// a refusal (400, 412 or 423) when the write may not go ahead.
func (rq *request) precheck(targets ...target) (*preconds, error) {
	pc := &preconds{tokens: map[string]bool{}}
	if v := rq.r.Header.Values("If"); len(v) > 0 {
		ifs, err := parseIf(strings.Join(v, " "))
		if err != nil {
			return nil, refusal(http.StatusBadRequest, "malformed If header")
		}
		pc.ifs = ifs
		for _, l := range ifs {
			for _, c := range l.Conds {
				if c.Token != "" && !c.Not {
					pc.tokens[c.Token] = true
				}
			}
		}
	}
	locks, err := rq.h.activeLocks(rq.r.Context(), rq.user.ID)
	if err != nil {
		return nil, err
	}
	pc.locks = locks
	// A target is blocked when a lock protecting it has not been
	// submitted (exclusive locks never overlap others; of overlapping
	// shared locks, any one submitted token suffices).
	blocked := ""
	isBlocked := false
	for _, t := range targets {
		hits := func(l *models.DavLock) bool {
			return covers(l, t.path) ||
				(t.membership && t.path != "/" && l.Path == pathParent(t.path)) ||
				(t.subtree && isUnder(l.Path, t.path))
		}
		for i := range locks {
			l := &locks[i]
			if !hits(l) || pc.tokens[l.Token] {
				continue
			}
			satisfied := false
			if l.Shared {
				for j := range locks {
					o := &locks[j]
					if o.Shared && pc.tokens[o.Token] && hits(o) &&
						(o.Path == l.Path || covers(o, l.Path) || covers(l, o.Path)) {
						satisfied = true
						break
					}
				}
			}
			if !satisfied {
				blocked, isBlocked = l.Path, true
				break
			}
		}
		if isBlocked {
			break
		}
	}
	// A client that presented a lock token which does not unlock the
	// resource gets 423 (it believes it holds a lock), whatever the rest
	// of its If header says; otherwise a false If header is 412 and a
	// lock alone is 423 (RFC 4918 §10.4.1, §12.1).
	if isBlocked && pc.presentedLockToken() {
		return nil, rq.lockedError(blocked)
	}
	if len(pc.ifs) > 0 && !rq.evalIf(pc) {
		return nil, refusal(http.StatusPreconditionFailed, "precondition failed")
	}
	if isBlocked {
		return nil, rq.lockedError(blocked)
	}
	return pc, nil
}

// presentedLockToken reports whether the If header names, positively, a
// state token other than DAV:no-lock.
func (pc *preconds) presentedLockToken() bool {
	for tok := range pc.tokens {
		if tok != "DAV:no-lock" {
			return true
		}
	}
	return false
}

// evalIf reports whether any list of the If header matches.
func (rq *request) evalIf(pc *preconds) bool {
	etags := map[string]string{}
	etagOf := func(p string) string {
		if e, ok := etags[p]; ok {
			return e
		}
		e := ""
		if fi, err := rq.stat(p); err == nil {
			e = rq.tree.etag(rq.r.Context(), p, fi)
		}
		etags[p] = e
		return e
	}
	for _, l := range pc.ifs {
		res := rq.path
		if l.Tag != "" {
			p, ok := rq.h.tagPath(l.Tag, rq.r.Host)
			if !ok {
				continue
			}
			res = p
		}
		match := true
		for _, c := range l.Conds {
			var ok bool
			if c.Token != "" {
				for i := range pc.locks {
					if pc.locks[i].Token == c.Token && covers(&pc.locks[i], res) {
						ok = true
						break
					}
				}
			} else {
				e := etagOf(res)
				ok = e != "" && (c.ETag == e || strings.TrimPrefix(c.ETag, "W/") == e)
			}
			if c.Not {
				ok = !ok
			}
			if !ok {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// tagPath maps an If header resource tag (absolute URL or path) to an
// internal path of the caller's tree.
func (h *Handler) tagPath(tag, host string) (string, bool) {
	u, err := url.Parse(tag)
	if err != nil {
		return "", false
	}
	if u.Host != "" && !strings.EqualFold(u.Host, host) {
		return "", false
	}
	p := u.Path
	if p != h.opts.Prefix && !strings.HasPrefix(p, h.opts.Prefix+"/") {
		return "", false
	}
	return h.internalPath(p)
}

// lockedError is the 423 of a write whose lock token was not submitted,
// naming the lock root (RFC 4918 §9.10.6 and §16, lock-token-submitted).
func (rq *request) lockedError(root string) error {
	return condError(http.StatusLocked, "lock-token-submitted", rq.h.href(root, false))
}

// maxLockOwner caps a lock's owner XML: every write and lockdiscovery
// reads the user's locks back.
const maxLockOwner = 16 << 10

// parseTimeout reads the Timeout header, capped by MaxLockTimeout.
func (h *Handler) parseTimeout(v string) time.Duration {
	max := h.opts.MaxLockTimeout
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if strings.EqualFold(part, "Infinite") {
			return max
		}
		if s, ok := strings.CutPrefix(part, "Second-"); ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				continue
			}
			d := time.Duration(n) * time.Second
			if n > int64(max/time.Second) || d > max {
				return max
			}
			return d
		}
	}
	return max
}

func (rq *request) serveLock() (int, error) {
	h := rq.h
	depthInf := true
	switch rq.r.Header.Get("Depth") {
	case "", "infinity", "Infinity":
	case "0":
		depthInf = false
	default:
		return refuse(http.StatusBadRequest, "invalid Depth")
	}
	doc, err := h.readXML(rq.r)
	if err != nil {
		return 0, xmlFailure(err)
	}
	timeout := h.parseTimeout(rq.r.Header.Get("Timeout"))
	if doc == nil {
		return rq.refreshLock(timeout)
	}
	shared, owner, err := parseLockInfo(doc)
	if err != nil {
		return 0, err
	}
	exists, err := rq.lockable()
	if err != nil {
		return 0, err
	}
	lock := models.DavLock{
		Token:          "opaquelocktoken:" + uuid.NewString(),
		UserID:         rq.user.ID,
		Path:           rq.path,
		Infinite:       depthInf,
		Shared:         shared,
		Owner:          owner,
		TimeoutSeconds: int64(timeout / time.Second),
		Expires:        time.Now().Add(timeout).Unix(),
	}
	if err := rq.insertLock(&lock); err != nil {
		return 0, err
	}
	status := http.StatusOK
	if !exists {
		created, err := rq.createLocked(&lock)
		if err != nil {
			return internal(err)
		}
		if created {
			status = http.StatusCreated
		}
	}
	rq.w.Header().Set("Lock-Token", "<"+lock.Token+">")
	rq.writeLockDiscovery(status, &lock)
	return 0, nil
}

// parseLockInfo reads a LOCK body's scope and owner.
func parseLockInfo(doc *xmlNode) (shared bool, owner string, err error) {
	if doc.Name != (xmlName{"DAV:", "lockinfo"}) {
		return false, "", refusal(http.StatusBadRequest, "expected lockinfo")
	}
	scope := doc.child("DAV:", "lockscope")
	ltype := doc.child("DAV:", "locktype")
	if scope == nil || ltype == nil || ltype.child("DAV:", "write") == nil {
		return false, "", refusal(http.StatusBadRequest, "lockinfo needs lockscope and write locktype")
	}
	switch {
	case scope.child("DAV:", "exclusive") != nil:
	case scope.child("DAV:", "shared") != nil:
		shared = true
	default:
		return false, "", refusal(http.StatusBadRequest, "unknown lockscope")
	}
	if o := doc.child("DAV:", "owner"); o != nil {
		owner = o.inner()
	}
	if len(owner) > maxLockOwner {
		return false, "", refusal(http.StatusBadRequest, fmt.Sprintf("lock owner is longer than %d bytes", maxLockOwner))
	}
	return shared, owner, nil
}

// lockable checks that the resource exists or may be created by the LOCK
// (RFC 4918 §7.3: an unmapped URL becomes an empty file, which needs the
// parent collection and its lock tokens), and evaluates the If header.
func (rq *request) lockable() (exists bool, err error) {
	_, err = rq.stat(rq.path)
	if err == nil {
		if len(rq.r.Header.Values("If")) > 0 {
			// Evaluate a given If header like any other request.
			_, err = rq.precheck()
		}
		return true, err
	}
	if !errors.Is(err, os.ErrNotExist) {
		return false, statError(err)
	}
	if pfi, err := rq.stat(pathParent(rq.path)); err != nil || !pfi.IsDir() {
		return false, refusal(http.StatusConflict, "parent collection does not exist")
	}
	// Creating the file changes the parent's membership.
	_, err = rq.precheck(target{path: pathParent(rq.path)})
	return false, err
}

// insertLock stores lock unless the user holds too many or it conflicts
// with an active lock, in a transaction serialised per user: a refusal
// (507, 423) when it may not be taken.
func (rq *request) insertLock(lock *models.DavLock) error {
	h := rq.h
	var conflict *models.DavLock
	tooMany := false
	err := h.withUserLock(rq.r.Context(), rq.user.ID, func(tx *gorm.DB) error {
		rows, err := userLocksTx(tx, rq.user.ID)
		if err != nil {
			return err
		}
		now := time.Now().Unix()
		active := 0
		for i := range rows {
			if rows[i].Expires > now {
				active++
			}
		}
		if active >= h.opts.MaxLocksPerUser {
			tooMany = true
			return nil
		}
		for i := range rows {
			l := &rows[i]
			if l.Expires <= now {
				continue
			}
			overlap := covers(l, lock.Path) || (lock.Infinite && isUnder(l.Path, lock.Path))
			if overlap && (!lock.Shared || !l.Shared) {
				conflict = l
				return nil
			}
		}
		return insertLockTx(tx, lock)
	})
	switch {
	case err != nil:
		return fmt.Errorf("take lock: %w", err)
	case tooMany:
		// Shared locks never conflict, so without a cap one user could
		// pile up locks that every later request of theirs reads.
		return refusal(http.StatusInsufficientStorage, fmt.Sprintf("too many active locks (at most %d per user)", h.opts.MaxLocksPerUser))
	case conflict != nil:
		// RFC 4918 §9.10.6: no-conflicting-lock names the lock met.
		return condError(http.StatusLocked, "no-conflicting-lock", h.href(conflict.Path, false))
	}
	h.locksChanged()
	return nil
}

// createLocked creates the empty file a LOCK of an unmapped URL locks,
// reporting whether it did (false: created meanwhile by another request,
// locked as it is). On failure the lock is dropped again: no lock on a
// name with nothing behind it.
func (rq *request) createLocked(lock *models.DavLock) (bool, error) {
	h, ctx := rq.h, rq.r.Context()
	created, err := rq.tree.createEmpty(ctx, rq.path)
	if err == nil {
		return created, nil
	}
	if derr := h.withUserLock(ctx, rq.user.ID, func(tx *gorm.DB) error {
		return deleteLockTx(tx, lock.Token)
	}); derr != nil {
		h.log.Error("webdav drop lock after failed create", "user", rq.user.Username, "path", rq.path, "err", derr)
	}
	h.locksChanged()
	return false, fmt.Errorf("create the locked resource: %w", err)
}

// refreshLock extends the lock whose token the If header submits for the
// request's resource (a LOCK without a body, RFC 4918 §9.10.2).
func (rq *request) refreshLock(timeout time.Duration) (int, error) {
	pc, err := rq.precheck()
	if err != nil {
		return 0, err
	}
	var found *models.DavLock
	for i := range pc.locks {
		l := &pc.locks[i]
		if pc.tokens[l.Token] && covers(l, rq.path) {
			found = l
			break
		}
	}
	if found == nil {
		return refuse(http.StatusPreconditionFailed, "no lock to refresh: submit its token in the If header")
	}
	found.TimeoutSeconds = int64(timeout / time.Second)
	found.Expires = time.Now().Add(timeout).Unix()
	if err := rq.h.extendLock(rq.r.Context(), found); err != nil {
		return internal(fmt.Errorf("refresh lock: %w", err))
	}
	rq.h.locksChanged()
	rq.writeLockDiscovery(http.StatusOK, found)
	return 0, nil
}

func (rq *request) writeLockDiscovery(status int, l *models.DavLock) {
	var b strings.Builder
	b.WriteString(xmlHeader + `<D:prop xmlns:D="DAV:"><D:lockdiscovery>`)
	rq.h.writeActiveLock(&b, l)
	b.WriteString(`</D:lockdiscovery></D:prop>`)
	rq.w.Header().Set("Content-Type", `application/xml; charset="utf-8"`)
	rq.w.WriteHeader(status)
	_, _ = io.WriteString(rq.w, b.String())
}

func (h *Handler) writeActiveLock(b stringWriter, l *models.DavLock) {
	b.WriteString(`<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope>`)
	if l.Shared {
		b.WriteString(`<D:shared/>`)
	} else {
		b.WriteString(`<D:exclusive/>`)
	}
	b.WriteString(`</D:lockscope><D:depth>`)
	if l.Infinite {
		b.WriteString("infinity")
	} else {
		b.WriteString("0")
	}
	b.WriteString(`</D:depth>`)
	if l.Owner != "" {
		b.WriteString(`<D:owner>` + l.Owner + `</D:owner>`)
	}
	left := l.Expires - time.Now().Unix()
	if left < 0 {
		left = 0
	}
	b.WriteString(`<D:timeout>Second-` + strconv.FormatInt(left, 10) + `</D:timeout><D:locktoken><D:href>`)
	escapeText(b, l.Token)
	b.WriteString(`</D:href></D:locktoken><D:lockroot><D:href>`)
	escapeText(b, h.href(l.Path, false))
	b.WriteString(`</D:href></D:lockroot></D:activelock>`)
}

func (rq *request) serveUnlock() (int, error) {
	tok := strings.TrimSpace(rq.r.Header.Get("Lock-Token"))
	if len(tok) < 3 || tok[0] != '<' || tok[len(tok)-1] != '>' {
		return refuse(http.StatusBadRequest, "missing or malformed Lock-Token")
	}
	tok = tok[1 : len(tok)-1]
	locks, err := rq.h.activeLocks(rq.r.Context(), rq.user.ID)
	if err != nil {
		return internal(err)
	}
	for i := range locks {
		if locks[i].Token == tok && covers(&locks[i], rq.path) {
			if err := rq.h.deleteUserLock(rq.r.Context(), rq.user.ID, tok); err != nil {
				return internal(fmt.Errorf("unlock: %w", err))
			}
			rq.h.locksChanged()
			return http.StatusNoContent, nil
		}
	}
	// RFC 4918 §9.11.1.
	return http.StatusConflict, condError(http.StatusConflict, "lock-token-matches-request-uri", "")
}
