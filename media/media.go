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
	"net/url"
	"strings"
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

// ReferencePrefix is the URL path app serves the WebDAV tree at, which
// references to its files name.
const ReferencePrefix = "/webdav"

// ReferencePath reports whether raw, a media reference's URI, names a
// file of a WebDAV tree, and the decoded path inside the tree: webdav:/a/b,
// /webdav/a/b, or <base>/webdav/a/b when base (the server's public URL)
// is set. The path is "" for a reference of those forms that cannot name
// a file (a host in webdav:, a query, a fragment); "..", encoded or not,
// is left for the store to refuse (treePath).
func ReferencePath(raw string, base *url.URL) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	var p string
	switch {
	case strings.EqualFold(u.Scheme, "webdav"):
		if u.Host != "" || u.User != nil || u.Opaque != "" {
			return "", true
		}
		p = u.Path
	case u.Scheme == "" && u.Host == "" && strings.HasPrefix(u.Path, ReferencePrefix+"/"):
		p = strings.TrimPrefix(u.Path, ReferencePrefix)
	case base != nil && strings.EqualFold(u.Scheme, base.Scheme) && strings.EqualFold(u.Host, base.Host) &&
		strings.HasPrefix(u.Path, strings.TrimRight(base.Path, "/")+ReferencePrefix+"/"):
		p = strings.TrimPrefix(u.Path, strings.TrimRight(base.Path, "/")+ReferencePrefix)
	default:
		return "", false
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || !strings.HasPrefix(p, "/") {
		return "", true
	}
	return p, true
}
