// Package media is the seam between references to users' files (action
// parameters and properties of type media_reference, docs/actions.md,
// "Media references") and the store that holds those files (WebDAV's
// POSIX or S3 store). It holds only the contract, so the engine can check
// and pin references without importing the WebDAV server.
package media

import (
	"context"
	"errors"
	"io"
	"time"
)

// File is one version of a file in a user's tree, as a reference to it is
// pinned.
type File struct {
	// Path is the file's path inside the user's tree ("/a/b.pdf").
	Path    string
	Size    int64
	ModTime time.Time
	// ETag is the ETag WebDAV serves for this version.
	ETag string
	// SHA256 is the hex SHA-256 of the content.
	SHA256 string
}

// ErrNoFile is the answer for every path that does not name a regular
// file the user may read: missing, a folder, "..", a reserved name, a
// symlink leaving the tree, a user with no tree. Callers must not tell
// these apart (a reference must not probe someone else's files).
var ErrNoFile = errors.New("media: no readable file at this path")

// Store reads users' files for media references.
type Store interface {
	// Stat describes the file at p in userID's tree, or ErrNoFile.
	Stat(ctx context.Context, userID, p string) (File, error)
	// Open opens the file at p for reading and describes the version the
	// reader reads, or ErrNoFile. The caller closes the reader.
	Open(ctx context.Context, userID, p string) (io.ReadCloser, File, error)
}
