package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// The methods of the tree + contents mode (store.go) that differ from
// POSIX mode's: GET, PUT, DELETE, MKCOL, COPY and MOVE. PROPFIND,
// PROPPATCH, LOCK and UNLOCK are shared, reading the tree through stat
// and the nodes' rows.

// nodeStore is the handler's tree + contents.
type nodeStore struct {
	tree  *tree
	blobs *blobs
}

// nodeHandler picks the method's handler in tree mode.
func (rq *request) nodeHandler() func() (int, error) {
	switch rq.r.Method {
	case http.MethodGet, http.MethodHead:
		return rq.nodeGet
	case http.MethodPut:
		return rq.nodePut
	case http.MethodDelete:
		return rq.nodeDelete
	case "MKCOL":
		return rq.nodeMkcol
	case "COPY", "MOVE":
		return rq.nodeCopyMove
	}
	return rq.handler()
}

// stat describes path p of the request's tree, in either mode.
func (rq *request) stat(p string) (fs.FileInfo, error) {
	if ns := rq.h.nodes; ns != nil {
		n, err := ns.tree.lookup(rq.r.Context(), rq.h.db, rq.user.ID, p)
		if err != nil {
			return nil, err
		}
		return nodeInfo{n}, nil
	}
	return rq.root.Stat(rel(p))
}

// lstat is stat without following a final symlink (POSIX mode; the tree
// has no links).
func (rq *request) lstat(p string) (fs.FileInfo, error) {
	if rq.h.nodes != nil {
		return rq.stat(p)
	}
	return rq.root.Lstat(rel(p))
}

// nodeOf is the row behind a tree-mode FileInfo.
func nodeOf(fi fs.FileInfo) *models.DavNode { return fi.(nodeInfo).n }

// ---- GET / HEAD ----

func (rq *request) nodeGet() (int, error) {
	fi, err := rq.stat(rq.path)
	if err != nil {
		return statFailure(err)
	}
	n := nodeOf(fi)
	if n.Dir {
		rq.serveNodeListing(n)
		return 0, nil
	}
	h := rq.w.Header()
	h.Set("ETag", nodeETag(n))
	h.Set("Content-Type", contentType(n.Name, false))
	setActiveContentHeaders(h)
	h.Set("Accept-Ranges", "bytes")
	spans, satisfiable := requestedSpans(rq.r.Header.Get("Range"), n.Size)
	br := &blobReader{ctx: rq.r.Context(), c: rq.h.nodes.blobs.contents, key: n.Blob, size: n.Size, spans: spans}
	defer br.Close()
	if rq.r.Method == http.MethodGet && n.Size > 0 && satisfiable && rq.r.Header.Get("If-None-Match") == "" && rq.r.Header.Get("If-Modified-Since") == "" {
		// Open before the status line goes out, so an unreachable
		// store answers 503 rather than a truncated 200.
		first := int64(0)
		if len(spans) > 0 {
			first = spans[0].off
		}
		if err := br.open(first); err != nil {
			if errors.Is(err, contents.ErrNoObject) {
				// Replaced and reclaimed since the lookup: read again.
				return rq.retryGet()
			}
			return 0, err
		}
	}
	// Over TLS the server's connection has no ReadFrom worth calling
	// (net/http would copy through 32 KiB): copy with our buffer.
	http.ServeContent(bigCopyWriter{ResponseWriter: rq.w, splice: rq.r.TLS == nil}, rq.r, n.Name, fi.ModTime(), br)
	return 0, nil
}

// bigCopyWriter sends a blobReader's bytes as its body can (contents.Sender:
// S3 over plain HTTP splices socket to socket) and copies anything else
// through a pooled 1 MiB buffer instead of io.Copy's 32 KiB: a store's
// stream cannot be sent with sendfile, and larger reads and writes cut
// the syscalls per byte on both sockets.
type bigCopyWriter struct {
	http.ResponseWriter
	splice bool // the response's connection can take ReadFrom (no TLS)
}

func (w bigCopyWriter) ReadFrom(r io.Reader) (int64, error) {
	out := io.Writer(struct{ io.Writer }{w.ResponseWriter})
	if w.splice {
		out = w.ResponseWriter
	}
	if lr, ok := r.(*io.LimitedReader); ok {
		if br, ok := lr.R.(*blobReader); ok {
			return br.sendTo(out, lr)
		}
	}
	return copyBig(w.ResponseWriter, r)
}

// copyBig copies r to w through a pooled 1 MiB buffer.
func copyBig(w io.Writer, r io.Reader) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, *bp)
}

// retryGet serves a GET again once, from the node as it now is.
func (rq *request) retryGet() (int, error) {
	if rq.r.Header.Get("X-Ontoflow-Retried") != "" {
		return refuse(http.StatusServiceUnavailable, "the file is being replaced")
	}
	rq.r.Header.Set("X-Ontoflow-Retried", "1")
	return rq.nodeGet()
}

// span is n bytes of a file from off.
type span struct{ off, n int64 }

// requestedSpans reads a Range header as http.ServeContent does: the
// ranges it will send (nil: the whole file), and false when it will
// answer 416 without reading. The spans only size the store's reads
// (blobReader), so a header read differently here costs a GET, not
// correctness.
func requestedSpans(rng string, size int64) ([]span, bool) {
	if rng == "" {
		return nil, true
	}
	spec, ok := strings.CutPrefix(rng, "bytes=")
	if !ok {
		return nil, false
	}
	var spans []span
	var noOverlap bool
	var sum int64
	for ra := range strings.SplitSeq(spec, ",") {
		ra = strings.TrimSpace(ra)
		if ra == "" {
			continue
		}
		first, last, ok := strings.Cut(ra, "-")
		if !ok {
			return nil, false
		}
		first, last = strings.TrimSpace(first), strings.TrimSpace(last)
		var sp span
		if first == "" { // the last N bytes
			k, err := strconv.ParseInt(last, 10, 64)
			if last == "" || last[0] == '-' || err != nil || k < 0 {
				return nil, false
			}
			sp = span{off: size - min(k, size), n: min(k, size)}
		} else {
			i, err := strconv.ParseInt(first, 10, 64)
			if err != nil || i < 0 {
				return nil, false
			}
			if i >= size {
				noOverlap = true
				continue
			}
			sp = span{off: i, n: size - i}
			if last != "" {
				j, err := strconv.ParseInt(last, 10, 64)
				if err != nil || i > j {
					return nil, false
				}
				sp.n = min(j, size-1) - i + 1
			}
		}
		spans = append(spans, sp)
		sum += sp.n
	}
	if noOverlap && len(spans) == 0 {
		return nil, false
	}
	if sum > size { // ServeContent sends the whole file instead
		return nil, true
	}
	return spans, true
}

// blobReader is an io.ReadSeeker over an object, for http.ServeContent:
// seeking costs nothing, a read opens a ranged GET from the offset (kept
// open while reads follow on) to the end of the requested span starting
// there, or of the object.
type blobReader struct {
	ctx   context.Context
	c     contents.Store
	key   string
	size  int64
	spans []span // the request's ranges
	off   int64
	body  io.ReadCloser
	at    int64 // the offset body reads next
	end   int64 // where body ends
}

func (b *blobReader) open(off int64) error {
	if b.body != nil && b.at == off && off < b.end {
		return nil
	}
	b.Close()
	var span int64 // the longest requested span starting at off
	for _, sp := range b.spans {
		if sp.off == off {
			span = max(span, sp.n)
		}
	}
	end := b.size
	if span > 0 {
		end = off + span
	}
	n := end - off
	if end == b.size {
		n = -1 // to the end: a whole file is a plain GET
	}
	body, err := b.c.Get(b.ctx, b.key, off, n)
	if err != nil {
		return err
	}
	b.body, b.at, b.off, b.end = body, off, off, end
	return nil
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	if err := b.open(b.off); err != nil {
		return 0, err
	}
	n, err := b.body.Read(p)
	b.off += int64(n)
	b.at = b.off
	if err == io.EOF {
		switch {
		case b.off < b.end:
			err = io.ErrUnexpectedEOF
		case b.off < b.size:
			err = nil // the span ended; the next read opens another
		}
	}
	return n, err
}

// sendTo sends lr's bytes (lr.R is b) to w, letting the body send them
// itself where it can.
func (b *blobReader) sendTo(w io.Writer, lr *io.LimitedReader) (int64, error) {
	var sent int64
	for lr.N > 0 && b.off < b.size {
		if err := b.open(b.off); err != nil {
			return sent, err
		}
		bs, ok := b.body.(contents.Sender)
		if !ok {
			break
		}
		want := min(lr.N, b.end-b.off)
		k, err := bs.SendTo(w, want)
		sent, lr.N, b.off = sent+k, lr.N-k, b.off+k
		b.at = b.off
		if err == nil && k < want {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return sent, err
		}
	}
	k, err := copyBig(w, lr)
	return sent + k, err
}

func (b *blobReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += b.off
	case io.SeekEnd:
		off += b.size
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	b.off = off
	return off, nil
}

func (b *blobReader) Close() error {
	if b.body != nil {
		b.body.Close()
		b.body = nil
	}
	return nil
}

// serveNodeListing is serveListing's tree-mode twin.
func (rq *request) serveNodeListing(dir *models.DavNode) {
	rq.listingStart()
	if rq.r.Method == http.MethodHead {
		return
	}
	after := ""
	for {
		ns, err := rq.h.nodes.tree.list(rq.r.Context(), rq.user.ID, dir.ID, after, 256)
		if err != nil {
			rq.h.log.Error("webdav listing", "user", rq.user.Username, "path", rq.path, "err", err)
			break
		}
		var b strings.Builder
		for i := range ns {
			rq.writeListingEntry(&b, ns[i].Name, nodeInfo{&ns[i]})
		}
		_, _ = io.WriteString(rq.w, b.String())
		if len(ns) < 256 {
			break
		}
		after = ns[len(ns)-1].Name
	}
	_, _ = io.WriteString(rq.w, "</tbody></table></div>\n")
}

// ---- DELETE ----

func (rq *request) nodeDelete() (int, error) {
	if rq.path == "/" {
		return refuse(http.StatusForbidden, "cannot delete the root collection")
	}
	fi, err := rq.stat(rq.path)
	if err != nil {
		return statFailure(err)
	}
	n := nodeOf(fi)
	if n.Dir {
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
	// Rows now, in one transaction with the properties and locks; the
	// objects go with the sweep (a single file's at once).
	err = rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if err := deleteSubtree(tx, n.ID); err != nil {
			return err
		}
		if err := touchDir(tx, n.ParentID); err != nil {
			return err
		}
		if err := rq.h.meta.dropTx(tx, rq.user.ID, rq.path); err != nil {
			return err
		}
		return dropLocks(tx, rq.user.ID, rq.path)
	})
	if err != nil {
		return internal(fmt.Errorf("delete: %w", err))
	}
	rq.h.locksChanged()
	rq.h.quota.invalidate(rq.user.ID)
	if !n.Dir {
		rq.reclaimLater(n.Blob)
	}
	return http.StatusNoContent, nil
}

// reclaimLater deletes a blob the request stopped referencing, after the
// answer; a failure is left to the sweep.
func (rq *request) reclaimLater(key string) {
	if key == "" {
		return
	}
	b, ctx := rq.h.nodes.blobs, context.WithoutCancel(rq.r.Context())
	go func() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := b.reclaim(ctx, key); err != nil {
			b.log.Warn("webdav: reclaim replaced contents (the sweep will retry)", "key", key, "err", err)
		}
	}()
}

// ---- MKCOL ----

func (rq *request) nodeMkcol() (int, error) {
	if rq.r.ContentLength > 0 || (rq.r.ContentLength < 0 && len(rq.r.TransferEncoding) > 0) {
		return refuse(http.StatusUnsupportedMediaType, "MKCOL with a body is not supported")
	}
	if rq.path == "/" {
		return refuse(http.StatusMethodNotAllowed, "the root collection exists")
	}
	if _, err := rq.stat(rq.path); err == nil {
		return refuse(http.StatusMethodNotAllowed, "resource exists")
	}
	pfi, err := rq.stat(pathParent(rq.path))
	if err != nil || !pfi.IsDir() {
		return refuse(http.StatusConflict, "parent collection does not exist")
	}
	if _, err := rq.precheck(target{path: rq.path, membership: true}); err != nil {
		return 0, err
	}
	parent := nodeOf(pfi)
	now := time.Now().UnixNano()
	n := &models.DavNode{UserID: rq.user.ID, ParentID: parent.ID, Name: pathBase(rq.path), Dir: true, MtimeNs: now, CreatedNs: now, Version: 1}
	err = rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if err := createNodeTx(tx, n); err != nil {
			return err
		}
		return rq.h.meta.dropTx(tx, rq.user.ID, rq.path)
	})
	if errors.Is(err, errExists) {
		return refuse(http.StatusMethodNotAllowed, "resource exists")
	}
	if err != nil {
		return internal(fmt.Errorf("mkcol: %w", err))
	}
	rq.w.Header().Set("Location", rq.h.href(rq.path, true))
	return http.StatusCreated, nil
}

// errExists: a node of that name was created meanwhile.
var errExists = errors.New("a resource of that name exists")

// ---- LOCK of an unmapped URL ----

// createEmptyNode creates the empty file a LOCK of an unmapped URL locks;
// false when something was created there meanwhile.
func (rq *request) createEmptyNode() (bool, error) {
	pfi, err := rq.stat(pathParent(rq.path))
	if err != nil || !pfi.IsDir() {
		return false, fmt.Errorf("parent collection: %w", os.ErrNotExist)
	}
	now := time.Now().UnixNano()
	n := &models.DavNode{UserID: rq.user.ID, ParentID: nodeOf(pfi).ID, Name: pathBase(rq.path), MtimeNs: now, CreatedNs: now, Version: 1,
		MD5: emptyMD5, SHA1: emptySHA1, SHA256: emptySHA256}
	err = rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
		if err := createNodeTx(tx, n); err != nil {
			return err
		}
		return rq.h.meta.dropTx(tx, rq.user.ID, rq.path)
	})
	if errors.Is(err, errExists) {
		return false, nil
	}
	return err == nil, err
}

// The digests of no bytes.
const (
	emptyMD5    = "d41d8cd98f00b204e9800998ecf8427e"
	emptySHA1   = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// ---- PROPPATCH of a modification time ----

// nodeSums are the checksums of a batch's files, from their rows.
func nodeSums(userID string, batch []entry) map[string]models.DavChecksum {
	sums := make(map[string]models.DavChecksum, len(batch))
	for _, e := range batch {
		n := nodeOf(e.fi)
		if n.Dir || n.SHA1 == "" {
			continue
		}
		sums[e.path] = models.DavChecksum{UserID: userID, Path: e.path, Size: n.Size, MtimeNs: n.MtimeNs, SHA1: n.SHA1, MD5: n.MD5}
	}
	return sums
}

// nodeListDir is listDir's tree-mode twin: members by name, 512 a page.
func (rq *request) nodeListDir(ctx context.Context, first []entry, pw *propWriter) error {
	if err := pw.writeBatch(ctx, nil, first); err != nil {
		return err
	}
	dir := nodeOf(first[0].fi)
	after := ""
	batch := make([]entry, 0, 512)
	for {
		ns, err := rq.h.nodes.tree.list(ctx, rq.user.ID, dir.ID, after, 512)
		if err != nil {
			return err
		}
		batch = batch[:0]
		for i := range ns {
			batch = append(batch, entry{path: pathJoin(rq.path, ns[i].Name), fi: nodeInfo{&ns[i]}})
		}
		if len(batch) > 0 {
			if err := pw.writeBatch(ctx, nil, batch); err != nil {
				return err
			}
			if err := pw.bw.Flush(); err != nil {
				return err
			}
		}
		if len(ns) < 512 {
			return nil
		}
		after = ns[len(ns)-1].Name
	}
}
