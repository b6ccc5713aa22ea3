package webdav

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/printable"
	"github.com/ontoflow/ontoflow/models"
)

// Namespaces of properties the handler knows.
const (
	nsDAV = "DAV:"
	// nsOC is ownCloud's namespace: rclone (vendor owncloud/nextcloud)
	// reads content hashes from oc:checksums.
	nsOC = "http://owncloud.org/ns"
	// nsMS holds the Win32* properties Windows' client sets.
	nsMS = "urn:schemas-microsoft-com:"
)

// liveProps are the live properties, in allprop order. Quota properties
// (RFC 4331 §3: not in allprop) and checksums are returned only on
// request, which keeps allprop listings free of extra work.
var liveProps = []xmlName{
	{nsDAV, "resourcetype"}, {nsDAV, "displayname"}, {nsDAV, "getcontentlength"},
	{nsDAV, "getcontenttype"}, {nsDAV, "getetag"}, {nsDAV, "getlastmodified"},
	{nsDAV, "creationdate"}, {nsDAV, "supportedlock"}, {nsDAV, "lockdiscovery"},
}

var onRequestProps = []xmlName{
	{nsDAV, "quota-available-bytes"}, {nsDAV, "quota-used-bytes"}, {nsOC, "checksums"},
}

func isLive(n xmlName) bool {
	for _, l := range liveProps {
		if l == n {
			return true
		}
	}
	for _, l := range onRequestProps {
		if l == n {
			return true
		}
	}
	return false
}

// mtimeProps may be set with PROPPATCH to change a file's modification
// time: rclone's DAV:lastmodified (Unix seconds), DAV:getlastmodified
// (HTTP date) and Windows' Win32LastModifiedTime (HTTP date). The Win32
// one is also kept as a dead property, as Windows reads it back.
func mtimeProp(n xmlName) bool {
	return n == xmlName{nsDAV, "lastmodified"} || n == xmlName{nsDAV, "getlastmodified"} ||
		n == xmlName{nsMS, "Win32LastModifiedTime"}
}

type propfindKind int

const (
	pfAllprop propfindKind = iota
	pfPropname
	pfProp
)

// entry is one resource of a PROPFIND answer.
type entry struct {
	path string
	fi   fs.FileInfo
	// link: the name is a symlink (inside the root) and fi its target's.
	link bool
}

func statusLine(code int) string {
	return "HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code)
}

func (rq *request) servePropfind() (int, error) {
	depth := rq.r.Header.Get("Depth")
	switch depth {
	case "0", "1":
	case "", "infinity", "Infinity":
		// RFC 4918 §9.1: a server may refuse Depth infinity with this
		// precondition.
		return http.StatusForbidden, condError(http.StatusForbidden, "propfind-finite-depth", "")
	default:
		return refuse(http.StatusBadRequest, "invalid Depth")
	}
	kind, names, include, err := rq.parsePropfind()
	if err != nil {
		return 0, err
	}
	fi, err := rq.stat(rq.path)
	if err != nil {
		return statFailure(err)
	}
	pw, err := rq.newPropWriter(kind, names, include)
	if err != nil {
		return internal(err)
	}
	rq.w.Header().Set("Content-Type", `application/xml; charset="utf-8"`)
	rq.w.WriteHeader(http.StatusMultiStatus)
	pw.bw = bufio.NewWriterSize(rq.w, 64<<10)
	_, _ = pw.bw.WriteString(xmlHeader + `<D:multistatus xmlns:D="DAV:">`)
	batch := []entry{{path: rq.path, fi: fi}}
	ctx := rq.r.Context()
	if depth == "1" && fi.IsDir() {
		err = rq.listDir(ctx, batch, pw)
	} else {
		err = pw.writeBatch(ctx, nil, batch)
	}
	if err != nil {
		// The status line is out: respond logs it and writes nothing
		// more, so the client sees a truncated body.
		return 0, fmt.Errorf("propfind: %w", err)
	}
	_, _ = pw.bw.WriteString(`</D:multistatus>`)
	_ = pw.bw.Flush()
	return 0, nil
}

// newPropWriter prepares what every entry of the answer needs: the
// user's locks, whether dead properties and checksums are to be read, and
// the quota figures when asked for.
func (rq *request) newPropWriter(kind propfindKind, names, include []xmlName) (*propWriter, error) {
	h, ctx := rq.h, rq.r.Context()
	want := func(n xmlName) bool {
		return slices.Contains(names, n) || slices.Contains(include, n)
	}
	locks, err := h.activeLocks(ctx, rq.user.ID)
	if err != nil {
		return nil, err
	}
	pw := &propWriter{
		rq: rq, kind: kind, names: names, include: include, locks: locks,
		withProps: kind != pfProp || anyDead(names),
		withSums:  want(xmlName{nsOC, "checksums"}),
		// A POSIX file's tag includes its version's generation, kept
		// with its checksum record (identity.go).
		withETags: kind != pfProp || want(xmlName{nsDAV, "getetag"}),
	}
	if pw.withProps {
		if pw.withProps, err = h.meta.hasProps(ctx, rq.user.ID); err != nil {
			return nil, err
		}
	}
	if want(xmlName{nsDAV, "quota-available-bytes"}) || want(xmlName{nsDAV, "quota-used-bytes"}) {
		avail, used, err := h.quota.values(ctx, rq.tree, rq.user)
		if err != nil {
			return nil, fmt.Errorf("quota: %w", err)
		}
		pw.quota = true
		pw.quotaAvail, pw.quotaUsed = avail, used
	}
	return pw, nil
}

// parsePropfind reads the PROPFIND body: allprop (also for an empty
// body) with its include list, propname, or the named properties.
func (rq *request) parsePropfind() (kind propfindKind, names, include []xmlName, err error) {
	doc, err := rq.h.readXML(rq.r)
	if err != nil {
		return 0, nil, nil, xmlFailure(err)
	}
	kind = pfAllprop
	if doc == nil {
		return kind, nil, nil, nil
	}
	if doc.Name != (xmlName{nsDAV, "propfind"}) {
		return 0, nil, nil, refusal(http.StatusBadRequest, "expected propfind")
	}
	switch {
	case doc.child(nsDAV, "propname") != nil:
		kind = pfPropname
	case doc.child(nsDAV, "allprop") != nil:
		if inc := doc.child(nsDAV, "include"); inc != nil {
			for _, k := range inc.Kids {
				include = append(include, k.Name)
			}
		}
	case doc.child(nsDAV, "prop") != nil:
		kind = pfProp
		for _, k := range doc.child(nsDAV, "prop").Kids {
			names = append(names, k.Name)
		}
	default:
		return 0, nil, nil, refusal(http.StatusBadRequest, "propfind needs prop, allprop or propname")
	}
	return kind, names, include, nil
}

func anyDead(names []xmlName) bool {
	for _, n := range names {
		if !isLive(n) {
			return true
		}
	}
	return false
}

// listDir writes the collection itself (first) and its members, a batch
// at a time, each handed to the client before the next is read, so memory
// stays flat however large the collection is.
func (rq *request) listDir(ctx context.Context, first []entry, pw *propWriter) error {
	if err := pw.writeBatch(ctx, nil, first); err != nil {
		return err
	}
	return rq.tree.members(ctx, rq.path, first[0].fi, 512, func(batch []entry, listing any) error {
		if err := pw.writeBatch(ctx, listing, batch); err != nil {
			return err
		}
		return pw.bw.Flush()
	})
}

// propWriter renders PROPFIND responses.
type propWriter struct {
	rq         *request
	bw         *bufio.Writer
	kind       propfindKind
	names      []xmlName
	include    []xmlName // allprop's include: on-request live properties to add
	locks      []models.DavLock
	withProps  bool
	withSums   bool
	withETags  bool
	quota      bool
	quotaAvail int64
	quotaUsed  int64
	missing    []xmlName
}

// writeBatch renders entries. listing is what the tree's members handed
// with them (the tree reads their records through it), or nil when they
// are not all members of one listed collection.
func (pw *propWriter) writeBatch(ctx context.Context, listing any, batch []entry) error {
	rq := pw.rq
	var props map[string][]models.DavProp
	var sums map[string]models.DavChecksum
	var err error
	if pw.withProps {
		paths := make([]string, len(batch))
		for i, e := range batch {
			paths[i] = e.path
		}
		if props, err = rq.h.meta.propsFor(ctx, rq.user.ID, paths); err != nil {
			return err
		}
	}
	if sums, err = rq.tree.sums(ctx, listing, batch, pw.withSums, pw.withETags); err != nil {
		return err
	}
	for _, e := range batch {
		sum, ok := sums[e.path]
		pw.writeEntry(e, props[e.path], sum, ok)
	}
	return nil
}

func (pw *propWriter) writeEntry(e entry, dead []models.DavProp, sum models.DavChecksum, hasSum bool) {
	b := pw.bw
	dir := e.fi.IsDir()
	b.WriteString(`<D:response><D:href>`)
	escapeText(b, pw.rq.h.href(e.path, dir))
	b.WriteString(`</D:href><D:propstat><D:prop>`)
	switch pw.kind {
	case pfPropname:
		for _, n := range liveProps {
			if !dir || n.Local != "getcontentlength" {
				writeEmpty(b, n)
			}
		}
		for _, d := range dead {
			writeEmpty(b, xmlName{d.Space, d.Name})
		}
	case pfAllprop:
		for _, n := range liveProps {
			pw.writeLive(n, e, dir, sum, hasSum)
		}
		// RFC 4918 §9.1, §14.8: allprop with include returns the named
		// live properties allprop leaves out (quota, checksums); dead
		// ones are in allprop already.
		for _, n := range pw.include {
			if slices.Contains(onRequestProps, n) {
				pw.writeLive(n, e, dir, sum, hasSum)
			}
		}
		for _, d := range dead {
			writeDead(b, d)
		}
		pw.missing = pw.missing[:0]
	case pfProp:
		pw.missing = pw.missing[:0]
		for _, n := range pw.names {
			if isLive(n) {
				if !pw.writeLive(n, e, dir, sum, hasSum) {
					pw.missing = append(pw.missing, n)
				}
				continue
			}
			found := false
			for _, d := range dead {
				if d.Space == n.Space && d.Name == n.Local {
					writeDead(b, d)
					found = true
					break
				}
			}
			if !found {
				pw.missing = append(pw.missing, n)
			}
		}
	}
	b.WriteString(`</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>`)
	if pw.kind == pfProp && len(pw.missing) > 0 {
		b.WriteString(`<D:propstat><D:prop>`)
		for _, n := range pw.missing {
			writeEmpty(b, n)
		}
		b.WriteString(`</D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>`)
	}
	b.WriteString("</D:response>\n")
}

// writeLive writes live property n; false when the resource has none.
func (pw *propWriter) writeLive(n xmlName, e entry, dir bool, sum models.DavChecksum, hasSum bool) bool {
	b := pw.bw
	fi := e.fi
	switch n {
	case xmlName{nsDAV, "resourcetype"}:
		if dir {
			b.WriteString(`<D:resourcetype><D:collection/></D:resourcetype>`)
		} else {
			b.WriteString(`<D:resourcetype/>`)
		}
	case xmlName{nsDAV, "displayname"}:
		b.WriteString(`<D:displayname>`)
		if e.path != "/" {
			escapeText(b, displayName(pathBase(e.path)))
		}
		b.WriteString(`</D:displayname>`)
	case xmlName{nsDAV, "getcontentlength"}:
		if dir {
			return false
		}
		b.WriteString(`<D:getcontentlength>`)
		b.WriteString(strconv.FormatInt(fi.Size(), 10))
		b.WriteString(`</D:getcontentlength>`)
	case xmlName{nsDAV, "getcontenttype"}:
		b.WriteString(`<D:getcontenttype>`)
		b.WriteString(contentType(fi.Name(), dir))
		b.WriteString(`</D:getcontenttype>`)
	case xmlName{nsDAV, "getetag"}:
		// Collections too (from the directory's inode, mtime, size and
		// change time: the stat already made). It changes when an entry
		// is created, removed, renamed or replaced by an upload (each
		// moves the directory's mtime; uploads pass through a temporary
		// file in it), not when a member's properties change, as
		// Apache's. A file's includes its version's generation.
		b.WriteString(`<D:getetag>`)
		escapeText(b, pw.rq.tree.etagWith(fi, sum, hasSum))
		b.WriteString(`</D:getetag>`)
	case xmlName{nsDAV, "getlastmodified"}:
		b.WriteString(`<D:getlastmodified>`)
		b.WriteString(fi.ModTime().UTC().Format(http.TimeFormat))
		b.WriteString(`</D:getlastmodified>`)
	case xmlName{nsDAV, "creationdate"}:
		b.WriteString(`<D:creationdate>`)
		b.WriteString(creationTime(fi).UTC().Format(time.RFC3339))
		b.WriteString(`</D:creationdate>`)
	case xmlName{nsDAV, "supportedlock"}:
		b.WriteString(`<D:supportedlock>` +
			`<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>` +
			`<D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>` +
			`</D:supportedlock>`)
	case xmlName{nsDAV, "lockdiscovery"}:
		pw.writeLockDiscovery(e.path)
	case xmlName{nsDAV, "quota-available-bytes"}:
		if !pw.quota {
			return false
		}
		b.WriteString(`<D:quota-available-bytes>` + strconv.FormatInt(pw.quotaAvail, 10) + `</D:quota-available-bytes>`)
	case xmlName{nsDAV, "quota-used-bytes"}:
		if !pw.quota {
			return false
		}
		b.WriteString(`<D:quota-used-bytes>` + strconv.FormatInt(pw.quotaUsed, 10) + `</D:quota-used-bytes>`)
	case xmlName{nsOC, "checksums"}:
		return pw.writeSum(e, sum, hasSum)
	default:
		return false
	}
	return true
}

// displayName is the name shown for a member: one put on disk by other
// means is shown with U+FFFD in place of what XML cannot carry (the href
// keeps the bytes).
func displayName(name string) string {
	if printable.String(name) {
		return name
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(name, string(utf8.RuneError)))
}

func (pw *propWriter) writeLockDiscovery(p string) {
	b := pw.bw
	b.WriteString(`<D:lockdiscovery>`)
	for i := range pw.locks {
		if covers(&pw.locks[i], p) {
			pw.rq.h.writeActiveLock(b, &pw.locks[i])
		}
	}
	b.WriteString(`</D:lockdiscovery>`)
}

// writeSum writes ownCloud's checksums property, valid only while the
// file is the one that was hashed; it reports false when there is none.
func (pw *propWriter) writeSum(e entry, sum models.DavChecksum, hasSum bool) bool {
	fi := e.fi
	if fi.IsDir() || !fi.Mode().IsRegular() {
		return false
	}
	if !hasSum && pw.rq.h.store.hashesEveryWrite() {
		return false // every stored file was hashed on its way in
	}
	if !hasSum || !sumValid(sum, fi) || !hasHashes(sum) {
		// Not hashed yet (large upload still queued, or lost across a
		// restart): queue it, publish none this time.
		if !pw.rq.h.unhashable(pw.rq.user.ID, e.path, fi) {
			pw.rq.h.hashLater(pw.rq.user.ID, e.path)
		}
		return false
	}
	pw.bw.WriteString(`<checksums xmlns="` + nsOC + `"><checksum>SHA1:` + sum.SHA1 + ` MD5:` + sum.MD5 + `</checksum></checksums>`)
	return true
}

// creationTime is the creation date: the platform's birth or change time
// (stat_*.go) when it is older than the modification time, else the
// modification time (a copy keeps an older mtime than its new inode).
func creationTime(fi fs.FileInfo) time.Time {
	if n, ok := fi.(nodeInfo); ok {
		return time.Unix(0, n.n.CreatedNs)
	}
	if c, ok := birthTime(fi); ok && c.Before(fi.ModTime()) {
		return c
	}
	return fi.ModTime()
}

func writeEmpty(b stringWriter, n xmlName) {
	if n.Space == nsDAV {
		b.WriteString(`<D:` + n.Local + `/>`)
		return
	}
	b.WriteString(`<` + n.Local + ` xmlns="`)
	escapeAttr(b, n.Space)
	b.WriteString(`"/>`)
}

func writeDead(b stringWriter, d models.DavProp) {
	b.WriteString(`<` + d.Name + ` xmlns="`)
	escapeAttr(b, d.Space)
	if d.Lang != "" {
		b.WriteString(`" xml:lang="`)
		escapeAttr(b, d.Lang)
	}
	b.WriteString(`">`)
	b.WriteString(d.Value)
	b.WriteString(`</` + d.Name + `>`)
}

// ---- PROPPATCH ----

type propOp struct {
	remove bool
	node   *xmlNode
}

func (rq *request) serveProppatch() (int, error) {
	h := rq.h
	doc, err := h.readXML(rq.r)
	if err != nil {
		return 0, xmlFailure(err)
	}
	if doc == nil || doc.Name != (xmlName{nsDAV, "propertyupdate"}) {
		return refuse(http.StatusBadRequest, "expected propertyupdate")
	}
	ops := proppatchOps(doc)
	if len(ops) == 0 {
		return refuse(http.StatusBadRequest, "propertyupdate without properties")
	}
	fi, err := rq.stat(rq.path)
	if err != nil {
		return statFailure(err)
	}
	if _, err := rq.precheck(target{path: rq.path}); err != nil {
		return 0, err
	}
	// Validate everything first: PROPPATCH is all or nothing (§9.2).
	status, mtime, failed := validateProppatch(ops)
	// Dead properties count against the quota: admit their growth.
	var grow int64
	if !failed {
		var ok bool
		if grow, ok, err = rq.admitProps(ops); err != nil {
			return internal(err)
		} else if !ok {
			for i, op := range ops {
				if !op.remove && !(op.node.Name.Space == nsDAV && mtimeProp(op.node.Name)) {
					status[i] = http.StatusInsufficientStorage
				}
			}
			failed = true
		}
	}
	if failed {
		for i := range status {
			if status[i] == http.StatusOK {
				status[i] = http.StatusFailedDependency
			}
		}
		rq.writePropstat(ops, status)
		return 0, nil
	}
	err = rq.applyProppatch(ops, fi, mtime)
	h.meta.propsWritten()
	h.quota.settle(rq.user.ID, grow, err == nil)
	if err != nil {
		return internal(fmt.Errorf("proppatch: %w", err))
	}
	rq.writePropstat(ops, status)
	return 0, nil
}

// proppatchOps lists a propertyupdate's set and remove operations in
// document order.
func proppatchOps(doc *xmlNode) []propOp {
	var ops []propOp
	for _, k := range doc.Kids {
		var remove bool
		switch k.Name {
		case xmlName{nsDAV, "set"}:
		case xmlName{nsDAV, "remove"}:
			remove = true
		default:
			continue
		}
		for _, p := range k.Kids {
			if p.Name != (xmlName{nsDAV, "prop"}) {
				continue
			}
			for _, n := range p.Kids {
				ops = append(ops, propOp{remove: remove, node: n})
			}
		}
	}
	return ops
}

// validateProppatch gives each operation its status (200 when it can be
// done) and the modification time one of them sets, if any.
func validateProppatch(ops []propOp) (status []int, mtime time.Time, failed bool) {
	status = make([]int, len(ops))
	for i, op := range ops {
		n := op.node.Name
		switch {
		case mtimeProp(n) && !op.remove:
			t, ok := parsePropTime(op.node.text())
			if !ok {
				status[i] = http.StatusConflict
				failed = true
				continue
			}
			mtime = t
			status[i] = http.StatusOK
		case isLive(n) || (n.Space == nsDAV && mtimeProp(n)):
			status[i] = http.StatusForbidden
			failed = true
		case !op.remove && propSize(n.Space, n.Local, op.node.inner(), op.node.Lang) > maxPropBytes:
			// RFC 4918 §9.2.1: 507, the server cannot record it.
			status[i] = http.StatusInsufficientStorage
			failed = true
		default:
			status[i] = http.StatusOK
		}
	}
	return status, mtime, failed
}

// applyProppatch stores the dead properties and sets the modification
// time in one transaction. All or nothing: when the properties cannot be
// stored after the time was set, the time goes back.
func (rq *request) applyProppatch(ops []propOp, fi fs.FileInfo, mtime time.Time) error {
	var undo func() error
	err := rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if err := rq.h.meta.setProps(tx, rq.user.ID, rq.path, ops); err != nil {
			return err
		}
		if mtime.IsZero() {
			return nil
		}
		var err error
		undo, err = rq.tree.setMtimeTx(tx, rq.path, fi, mtime)
		return err
	})
	if err != nil && undo != nil {
		if rerr := undo(); rerr != nil {
			rq.h.log.Error("webdav restore mtime after failed PROPPATCH", "user", rq.user.Username, "path", rq.path, "err", rerr)
		}
	}
	return err
}

// admitProps reserves against the user's quota the growth of the dead
// properties ops set or remove on the request's resource; ok is false
// when it does not fit. The caller settles grow.
func (rq *request) admitProps(ops []propOp) (grow int64, ok bool, err error) {
	quota := rq.h.quota.of(rq.user)
	if quota <= 0 {
		return 0, true, nil
	}
	old, err := rq.h.meta.propsFor(rq.r.Context(), rq.user.ID, []string{rq.path})
	if err != nil {
		return 0, false, err
	}
	size := map[xmlName]int64{}
	for _, d := range old[rq.path] {
		size[xmlName{d.Space, d.Name}] = propSize(d.Space, d.Name, d.Value, d.Lang)
	}
	for _, op := range ops {
		n := op.node.Name
		if n.Space == nsDAV && mtimeProp(n) {
			continue
		}
		grow -= size[n]
		size[n] = 0
		if !op.remove {
			size[n] = propSize(n.Space, n.Local, op.node.inner(), op.node.Lang)
			grow += size[n]
		}
	}
	ok, err = rq.h.quota.admit(rq.r.Context(), rq.tree, rq.user.ID, quota, grow)
	return grow, ok, err
}

// parsePropTime reads Unix seconds or an HTTP date.
func parsePropTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if t, ok := parseMtime(s); ok {
		return t, true
	}
	if t, err := http.ParseTime(s); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

func (rq *request) writePropstat(ops []propOp, status []int) {
	var b strings.Builder
	b.WriteString(xmlHeader + `<D:multistatus xmlns:D="DAV:"><D:response><D:href>`)
	fi, err := rq.stat(rq.path)
	escapeText(&b, rq.h.href(rq.path, err == nil && fi.IsDir()))
	b.WriteString(`</D:href>`)
	done := map[int]bool{}
	for i := range ops {
		if done[status[i]] {
			continue
		}
		done[status[i]] = true
		b.WriteString(`<D:propstat><D:prop>`)
		for j := range ops {
			if status[j] == status[i] {
				writeEmpty(&b, ops[j].node.Name)
			}
		}
		b.WriteString(`</D:prop><D:status>` + statusLine(status[i]) + `</D:status></D:propstat>`)
	}
	b.WriteString(`</D:response></D:multistatus>`)
	rq.w.Header().Set("Content-Type", `application/xml; charset="utf-8"`)
	rq.w.WriteHeader(http.StatusMultiStatus)
	_, _ = io.WriteString(rq.w, b.String())
}
