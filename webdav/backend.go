package webdav

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// backend keeps the users' trees in one way. New chooses one, once
// (Options.Contents): posixBackend, a directory per user under Root
// (backend_posix.go), or nodeBackend, the tree as rows of dav_nodes and
// file contents in a contents.Store (backend_nodes.go). The protocol —
// methods, XML, properties, locks, conditional requests, quotas — reaches
// storage only through a backend and the userTree it opens per request,
// as x/net/webdav's handler reaches a FileSystem; each method's handler
// is written once, and calls the tree for the steps that touch storage
// after its own checks.
type backend interface {
	// kind names the backend in logs.
	kind() string
	// open opens userID's tree for one request (or one call of the
	// package's API); the caller closes it.
	open(ctx context.Context, userID string) (userTree, error)
	// freeBytes is the room left when a user has no quota (RFC 4331's
	// available bytes).
	freeBytes() int64
	// hashesEveryWrite: every stored file was hashed on its way in, so a
	// file without a checksum record has none to wait for.
	hashesEveryWrite() bool
	// recent lists up to limit of the user's files, most recently
	// modified first (Handler.Recent).
	recent(ctx context.Context, userID string, limit int) ([]FileInfo, error)
}

// sweeping is a backend that reclaims what interrupted writes left behind
// by a periodic pass (RunSweeper); one without it has nothing to sweep.
type sweeping interface {
	sweepOnce(ctx context.Context) (SweepStats, error)
}

// userTree is one user's tree while a request runs. Paths are internal
// ("/" or "/a/b"); a FileInfo handed back to a method is one the same
// tree returned.
type userTree interface {
	close()
	// stat describes p, following a final symbolic link where the
	// storage has them; lstat does not follow it.
	stat(ctx context.Context, p string) (fs.FileInfo, error)
	lstat(ctx context.Context, p string) (fs.FileInfo, error)
	// etag is the strong entity tag of the resource at p (fi its stat);
	// etagWith is the tag given the checksum record already read for it.
	etag(ctx context.Context, p string, fi fs.FileInfo) string
	etagWith(fi fs.FileInfo, rec models.DavChecksum, ok bool) string
	// members calls fn with the members of collection p (dir its stat), at
	// most page at a time, in an order of the storage's own; listing is
	// what sums takes to read a page's records in one pass.
	members(ctx context.Context, p string, dir fs.FileInfo, page int, fn func(batch []entry, listing any) error) error
	// sums are the checksum records of a batch of entries (nil listing:
	// not all members of one listed collection); only those asked for.
	sums(ctx context.Context, listing any, batch []entry, withSums, withETags bool) (map[string]models.DavChecksum, error)
	// fileBytes sums the sizes of the files at or below p (fi its stat).
	fileBytes(ctx context.Context, p string, fi fs.FileInfo) (int64, error)
	// openFile opens the file or collection at p for GET: what is sent,
	// and the version it is.
	openFile(ctx context.Context, p string) (fileContent, error)
	// readRange reads n bytes of the file at p (fi its stat) from off.
	readRange(ctx context.Context, p string, fi fs.FileInfo, off, n int64) (io.ReadCloser, error)
	// mkcol creates collection p in parent (its stat); errExists when a
	// resource of that name appeared meanwhile.
	mkcol(ctx context.Context, p string, parent fs.FileInfo) error
	// createEmpty creates the empty file a LOCK of an unmapped URL
	// locks; false when something was created there meanwhile.
	createEmpty(ctx context.Context, p string) (bool, error)
	// remove deletes p (fi its stat) and everything below it with its
	// properties, checksums and locks; failed lists the members that
	// could not be deleted (p then stays).
	remove(ctx context.Context, p string, fi fs.FileInfo) (failed []deleteFailure, err error)
	// copyMove carries out a checked and admitted COPY or MOVE.
	copyMove(ctx context.Context, op copyMove) error
	// putTarget prepares a PUT to p: its parent must be a collection
	// (else an error the handler answers 409, or 403 for an escape).
	putTarget(ctx context.Context, p string) (putTarget, error)
	// setMtimeTx records a client's modification time for p in the
	// PROPPATCH's transaction; undo reverts what the storage changed
	// outside it, should the transaction fail (nil: nothing to undo).
	setMtimeTx(tx *gorm.DB, p string, fi fs.FileInfo, mtime time.Time) (undo func() error, err error)
}

// fileContent is a file opened for GET, or a collection (fi.IsDir()).
type fileContent interface {
	info() fs.FileInfo
	etag() string
	// body is what http.ServeContent reads; prepare readies it for the
	// request's ranges before the status line goes out, so an unreachable
	// store answers 503 rather than a truncated 200 (errReplaced: the
	// version was replaced and reclaimed since the lookup, look again).
	body() io.ReadSeeker
	prepare(r *http.Request) error
	// writer is the response writer ServeContent copies through.
	writer(w http.ResponseWriter, r *http.Request) http.ResponseWriter
	close()
}

// errNoParent: a PUT's parent is not a collection (409; 403 when the
// path escapes the tree).
var errNoParent = errors.New("parent collection does not exist")

// errReplaced: the file's contents went between its lookup and the read.
var errReplaced = errors.New("the file was replaced during the request")

// copyMove is a COPY or MOVE the handler checked, locked and admitted.
type copyMove struct {
	move     bool
	src, dst string
	sfi, dfi fs.FileInfo // dfi nil when nothing is at dst
	infinite bool        // COPY Depth: infinity
	// replace: a file replaces a file (renamed over it, so a failed
	// transfer leaves the destination whole); with a collection involved
	// the destination is cleared first.
	replace bool
}

// putTarget is one PUT's storage side: the existing resource, then the
// steps of an upload (upload.run) that touch storage.
type putTarget interface {
	// existing is the resource at the path (ok false: none).
	existing() (fi fs.FileInfo, ok bool)
	// receive streams the request's body into storage not yet visible
	// at the path, hashed as the storage needs (u's limit applies).
	receive(u *upload) error
	// commit makes it the path's contents; etag is then its tag.
	commit(u *upload) error
	etag(u *upload) string
	// cleanup removes what an uncommitted upload left.
	cleanup(u *upload)
}
