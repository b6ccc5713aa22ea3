// Package webdav serves every service user's own file tree over WebDAV
// (RFC 4918 classes 1 and 2, RFC 4331 quotas) from the API process.
//
// Each user sees only Root/<user-id>, opened with os.Root so that no path,
// encoded traversal or symlink can leave it. Locks and dead properties
// live in the database (see models/dav.go), so they survive restarts and
// are shared between API replicas; content checksums live on the files
// themselves where the filesystem allows it (sums.go). Writes are atomic
// (temporary file + rename), PROPFIND streams directories in batches, and
// checksums are published the ownCloud way so sync clients such as rclone
// compare by hash.
package webdav

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/internal/printable"
	"github.com/ontoflow/ontoflow/models"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// Options configure a Handler.
type Options struct {
	// Root is the data directory; each user's tree is Root/<user-id>.
	Root string
	// Prefix is the URL path the tree is served at (default "/webdav").
	Prefix string
	// MaxUploadBytes caps one PUT body (413 beyond it); <= 0 = unlimited.
	MaxUploadBytes int64
	// DefaultQuota is the per-user quota in bytes when User.QuotaBytes is
	// 0; < 0 = unlimited, 0 = unlimited too.
	DefaultQuota int64
	// MaxLockTimeout caps requested lock timeouts (default 24h); it is
	// also the timeout of "Infinite" and of requests naming none.
	MaxLockTimeout time.Duration
	// Fsync flushes each upload and copied file, and its directory, to
	// disk before the answer, so a reported write survives a power loss.
	Fsync bool
	// MaxLocksPerUser caps one user's active locks (default 1000, 507
	// beyond): shared locks never conflict, and every write reads them.
	MaxLocksPerUser int
	// MaxXMLBytes caps XML request bodies (default 1 MiB, 413 beyond).
	MaxXMLBytes int64
	// MaxXMLDepth caps XML nesting (default 64, 400 beyond).
	MaxXMLDepth int
	// Registerer receives the Prometheus metrics; nil = not registered.
	Registerer prometheus.Registerer
	// Logger receives access logs (Info) and errors; nil = slog.Default().
	Logger *slog.Logger
	// ChecksumsInDB keeps upload checksums in the database even where the
	// data directory's filesystem supports user extended attributes (the
	// default there is to keep them on the files; see sums.go).
	ChecksumsInDB bool
	// Contents, when set, selects the tree + contents mode (store.go):
	// the tree in the database, file contents in this store (S3). Nil
	// keeps each user's tree as a directory under Root.
	Contents contents.Store
	// backend, when set, builds the handler's backend instead of the
	// two above: the one registration a test-only backend needs
	// (backend_mem_test.go).
	backend func(*Handler) backend
}

// Handler is the WebDAV http.Handler. It is safe for concurrent use, and
// several Handlers (replicas) may share one database and data directory.
type Handler struct {
	db    *gorm.DB
	authn *auth.Service
	opts  Options
	log   *slog.Logger
	m     *metrics
	realm string
	// meta keeps dead properties and checksums (meta.go), in the
	// database or partly on the files, chosen by New; quota admits writes.
	meta  metaStore
	quota *quotas
	made  cappedMap // user id -> struct{}: root directory exists (maxCachedUsers)
	sweep atomic.Int64
	// hashing holds the files queued for background hashing (dedupe;
	// at most maxHashQueue); hashSem lets one hash run at a time.
	hashing    sync.Map
	hashSem    chan struct{}
	hashQueued atomic.Int64
	// gen counts changes to the locks and properties (gen.go);
	// lockCache caches users' active locks (activeLocks), lockTTL bounds it.
	gen       generations
	lockCache cappedMap // user id -> lockCacheEntry (maxCachedUsers, maxCachedLockBytes each)
	lockTTL   time.Duration
	// stmtMu guards locksStmt, activeLocks' prepared query.
	stmtMu    sync.Mutex
	locksStmt *sql.Stmt
	// unhashableSet remembers file versions (user\x00path -> ETag) whose
	// checksum attribute could not be set (markUnhashable; at most
	// maxUnhashable, then cleared).
	unhashableSet sync.Map
	unhashableN   atomic.Int64
	// store keeps the trees (backend.go), chosen once in New.
	store backend
}

// Defaults of Options, and of the flags that set them (config uses these
// constants: one source; the lock timeout cap was 24 h here and 1 h in
// config).
const (
	DefaultMaxLocksPerUser = defaults.MaxLocksPerUser
	DefaultMaxLockTimeout  = defaults.MaxLockTimeout
)

// New returns a Handler serving users authenticated by authn.
func New(db *gorm.DB, authn *auth.Service, opts Options) (*Handler, error) {
	if db == nil || authn == nil {
		return nil, errors.New("webdav: db and auth service are required")
	}
	if opts.Root == "" {
		return nil, errors.New("webdav: Root is required")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("webdav: root: %w", err)
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("webdav: create root: %w", err)
	}
	opts.Root = root
	if opts.Prefix == "" {
		opts.Prefix = "/webdav"
	}
	opts.Prefix = "/" + strings.Trim(opts.Prefix, "/")
	if opts.Prefix == "/" {
		return nil, errors.New("webdav: Prefix must not be /")
	}
	if opts.MaxLocksPerUser <= 0 {
		opts.MaxLocksPerUser = DefaultMaxLocksPerUser
	}
	if opts.MaxLockTimeout <= 0 {
		opts.MaxLockTimeout = DefaultMaxLockTimeout
	}
	if opts.MaxXMLBytes <= 0 {
		opts.MaxXMLBytes = 1 << 20
	}
	if opts.MaxXMLDepth <= 0 {
		opts.MaxXMLDepth = 64
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	h := &Handler{db: db, authn: authn, opts: opts, log: opts.Logger, m: m, realm: "Ontoflow WebDAV", hashSem: make(chan struct{}, 1), lockTTL: lockCacheTTL}
	h.made.max, h.lockCache.max = maxCachedUsers, maxCachedUsers
	h.gen, err = openGenerations(context.Background(), db)
	if err != nil {
		// Correct without them, only slower: every write reads the locks.
		h.log.Warn("webdav: change counters unavailable; locks are read from the database on every write", "err", err)
	}
	if opts.Contents != nil || opts.backend != nil {
		// Checksums live in the tree's rows; properties in the database.
		opts.ChecksumsInDB = true
		h.opts.ChecksumsInDB = true
	}
	if h.meta, err = chooseMetaStore(db, &h.gen, opts, h.log); err != nil {
		return nil, err
	}
	switch {
	case opts.backend != nil:
		h.store = opts.backend(h)
	case opts.Contents != nil:
		h.store = &nodeBackend{h: h, tree: newTree(db), blobs: &blobs{db: db, contents: opts.Contents, log: h.log}}
	default:
		h.store = &posixBackend{h: h}
	}
	h.quota = &quotas{defaultQuota: opts.DefaultQuota, free: h.store.freeBytes, props: h.meta}
	h.log.Info("webdav store", "store", h.store.kind(), "checksums", h.meta.kind(), "root", root)
	return h, nil
}

// davMethods is the Allow list.
const davMethods = "OPTIONS, GET, HEAD, PUT, DELETE, MKCOL, COPY, MOVE, PROPFIND, PROPPATCH, LOCK, UNLOCK"

// request is one authenticated request against a user's tree.
type request struct {
	h    *Handler
	w    http.ResponseWriter
	r    *http.Request
	user *models.User
	tree userTree // the user's tree, open while the request runs
	path string   // "/" or "/a/b"
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.serveHTTP(w, r, nil) }

// ServeFor serves r (a path under the prefix) in user u's tree exactly as
// ServeHTTP does once it has authenticated u: quota, size limits, locks
// and the store behave the same. It is for callers in this process that
// authenticated u their own way (the console's session), never for
// requests from the network as they are.
func (h *Handler) ServeFor(w http.ResponseWriter, r *http.Request, u *models.User) {
	h.serveHTTP(w, r, u)
}

func (h *Handler) serveHTTP(w http.ResponseWriter, r *http.Request, as *models.User) {
	start := time.Now()
	rw := &respWriter{ResponseWriter: w}
	body := &countingBody{ReadCloser: r.Body}
	if r.Body != nil && r.Body != http.NoBody {
		// Count on a shallow copy: net/http inspects its own request's
		// Body type to decide whether an unanswered "Expect:
		// 100-continue" body must be drained (it would wait forever).
		r2 := *r
		r2.Body = body
		r = &r2
	}
	rq := &request{h: h, w: rw, r: r}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Error("webdav panic", "panic", p, "method", r.Method, "path", r.URL.Path)
			if !rw.wrote {
				http.Error(rw, "internal error", http.StatusInternalServerError)
			}
		}
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		username := ""
		if rq.user != nil {
			username = rq.user.Username
		}
		d := time.Since(start)
		h.m.observe(r.Method, status, d, body.n, rw.n)
		h.log.Info("webdav",
			"user", username, "method", r.Method, "path", r.URL.Path,
			"status", status, "bytes_in", body.n, "bytes_out", rw.n,
			"duration_ms", float64(d.Microseconds())/1000)
	}()
	defer rq.close()
	if as != nil {
		rq.user = as
		rq.respond(rq.serve(r.URL.Path))
		return
	}
	rq.respond(rq.serveAny())
}

// serveAny answers the probes outside the tree, or authenticates the
// caller and serves the request in their tree.
func (rq *request) serveAny() (int, error) {
	// A literal '#' in the request line is part of the name: treating it
	// as a fragment would let "DELETE /dir/#x" remove /dir.
	p := rq.r.URL.Path
	if p != rq.h.opts.Prefix && !strings.HasPrefix(p, rq.h.opts.Prefix+"/") {
		return rq.h.serveServerRoot(rq.w, rq.r, p)
	}
	principal, err := rq.h.authenticate(rq.w, rq.r)
	if err != nil {
		return 0, err
	}
	rq.user = principal.User
	return rq.serve(p)
}

// serve maps the URL path into the user's tree and runs the method's
// handler; respond writes what it returns.
func (rq *request) serve(p string) (int, error) {
	ip, ok := rq.h.internalPath(p)
	if !ok {
		return refuse(http.StatusBadRequest, "invalid path")
	}
	if isReserved(ip) {
		return refuse(http.StatusForbidden, "reserved name")
	}
	t, err := rq.h.store.open(rq.r.Context(), rq.user.ID)
	if err != nil {
		rq.h.log.Error("webdav open user tree", "user", rq.user.Username, "err", err)
		return refuse(http.StatusInternalServerError, "storage unavailable")
	}
	rq.tree, rq.path = t, ip
	return rq.handler()()
}

// close releases what serve opened.
func (rq *request) close() {
	if rq.tree != nil {
		rq.tree.close()
	}
}

// authenticate admits HTTP Basic only (auth.AuthenticateWebDAV: the
// account password or an app password): WebDAV clients send nothing else,
// and a bearer token (a guest session's above all) must not reach the
// user's files. A refusal is 401 or 429, with its header set.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (*auth.Principal, error) {
	principal, err := h.authn.AuthenticateWebDAV(r)
	if te, ok := auth.AsThrottled(err); ok {
		// Too many failed attempts: a 401 would invite the client to
		// prompt again at once.
		w.Header().Set("Retry-After", strconv.Itoa(te.RetryAfterSeconds()))
		return nil, refusal(http.StatusTooManyRequests, "too many failed authentication attempts")
	}
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="`+h.realm+`", charset="UTF-8"`)
		return nil, refusal(http.StatusUnauthorized, "authentication required")
	}
	return principal, nil
}

// handler picks the method's handler.
func (rq *request) handler() func() (int, error) {
	switch rq.r.Method {
	case http.MethodOptions:
		return rq.serveOptions
	case http.MethodGet, http.MethodHead:
		return rq.serveGet
	case http.MethodPut:
		return rq.servePut
	case http.MethodDelete:
		return rq.serveDelete
	case "MKCOL":
		return rq.serveMkcol
	case "COPY", "MOVE":
		return rq.serveCopyMove
	case "PROPFIND":
		return rq.servePropfind
	case "PROPPATCH":
		return rq.serveProppatch
	case "LOCK":
		return rq.serveLock
	case "UNLOCK":
		return rq.serveUnlock
	case http.MethodPost, http.MethodPatch, "TRACE", "CONNECT":
		return func() (int, error) {
			rq.w.Header().Set("Allow", davMethods)
			return refuse(http.StatusMethodNotAllowed, "method not allowed")
		}
	}
	return func() (int, error) { return refuse(http.StatusNotImplemented, "unknown method") }
}

func (rq *request) serveOptions() (int, error) {
	rq.h.writeOptions(rq.w)
	return 0, nil
}

func (h *Handler) writeOptions(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("DAV", "1, 2")
	hd.Set("MS-Author-Via", "DAV")
	hd.Set("Allow", davMethods)
	hd.Set("Accept-Ranges", "bytes")
	hd.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// serveServerRoot answers the probes Windows and macOS send to "/" (and
// anything else outside the prefix that reaches the handler): OPTIONS with
// the DAV headers, PROPFIND with a plain collection whose only member is
// the WebDAV tree.
func (h *Handler) serveServerRoot(w http.ResponseWriter, r *http.Request, p string) (int, error) {
	switch r.Method {
	case http.MethodOptions:
		h.writeOptions(w)
		return 0, nil
	case "PROPFIND":
		if p != "/" {
			break
		}
		depth := r.Header.Get("Depth")
		var b strings.Builder
		b.WriteString(xmlHeader + `<D:multistatus xmlns:D="DAV:">`)
		now := time.Now()
		writeStaticCollection(&b, "/", "", now)
		if depth == "1" {
			writeStaticCollection(&b, h.opts.Prefix+"/", strings.TrimPrefix(h.opts.Prefix, "/"), now)
		}
		b.WriteString(`</D:multistatus>`)
		w.Header().Set("Content-Type", `application/xml; charset="utf-8"`)
		w.Header().Set("DAV", "1, 2")
		w.WriteHeader(http.StatusMultiStatus)
		_, _ = w.Write([]byte(b.String()))
		return 0, nil
	}
	// http.NotFound's text, as before.
	return refuse(http.StatusNotFound, "404 page not found")
}

func writeStaticCollection(b *strings.Builder, href, name string, t time.Time) {
	b.WriteString(`<D:response><D:href>`)
	escapeText(b, href)
	b.WriteString(`</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype><D:displayname>`)
	escapeText(b, name)
	b.WriteString(`</D:displayname><D:getlastmodified>` + t.UTC().Format(http.TimeFormat) + `</D:getlastmodified>`)
	b.WriteString(`<D:supportedlock/><D:lockdiscovery/></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>`)
}

// internalPath maps a decoded URL path under the prefix to "/" or "/a/b".
// It refuses ".." segments, NUL bytes and over-long names.
func (h *Handler) internalPath(p string) (string, bool) {
	return treePath(strings.TrimPrefix(p, h.opts.Prefix))
}

// treePath maps a decoded path inside a user's tree to "/" or "/a/b"
// (internalPath's rules, shared with media references).
func treePath(rest string) (string, bool) {
	if len(rest) > 4096 || !printable.String(rest) {
		return "", false
	}
	var b strings.Builder
	for _, seg := range strings.Split(rest, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return "", false
		}
		if len(seg) > 255 {
			return "", false
		}
		b.WriteByte('/')
		b.WriteString(seg)
	}
	if b.Len() == 0 {
		return "/", true
	}
	return b.String(), true
}

// tmpPrefix starts the names of in-progress uploads; such names are never
// listed and cannot be addressed by clients.
const tmpPrefix = ".~davtmp-"

func isReserved(p string) bool {
	return strings.HasPrefix(pathBase(p), tmpPrefix)
}

// openRoot opens the user's tree, creating it on first use.
func (h *Handler) openRoot(userID string) (*os.Root, error) {
	if userID == "" || strings.ContainsAny(userID, `/\`) || userID == "." || userID == ".." {
		return nil, errors.New("invalid user id")
	}
	dir := filepath.Join(h.opts.Root, userID)
	if _, ok := h.made.Load(userID); !ok {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, err
		}
		h.made.Store(userID, struct{}{})
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, err
		}
		root, err = os.OpenRoot(dir)
	}
	return root, err
}

// rel turns an internal path into a name for os.Root.
func rel(p string) string {
	if p == "/" {
		return "."
	}
	return p[1:]
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func pathParent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func pathJoin(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// isUnder reports whether p is anc or inside it.
func isUnder(p, anc string) bool {
	if anc == "/" || p == anc {
		return true
	}
	return strings.HasPrefix(p, anc) && p[len(anc)] == '/'
}

// href is the escaped URL path of internal path p.
func (h *Handler) href(p string, dir bool) string {
	var b strings.Builder
	b.WriteString(h.opts.Prefix)
	if p != "/" {
		for _, seg := range strings.Split(p[1:], "/") {
			b.WriteByte('/')
			b.WriteString(escapeSegment(seg))
		}
	}
	if dir {
		b.WriteByte('/')
	}
	return b.String()
}

// escapeSegment percent-encodes a path segment; unlike url.PathEscape it
// also encodes characters some clients mishandle (&, +, ;, =, :, @...).
func escapeSegment(s string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !segSafe(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	out := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if segSafe(c) {
			out = append(out, c)
		} else {
			out = append(out, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(out)
}

func segSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// stat describes path p of the request's tree.
func (rq *request) stat(p string) (fs.FileInfo, error) { return rq.tree.stat(rq.r.Context(), p) }

// lstat is stat without following a final symlink.
func (rq *request) lstat(p string) (fs.FileInfo, error) { return rq.tree.lstat(rq.r.Context(), p) }
