package webdav

import (
	"context"
	"errors"
	"io"

	"github.com/ontoflow/ontoflow/webdav/storeurl"
)

// The storage seam. A Handler keeps each user's tree in one of two ways,
// chosen once at assembly (Options.Contents):
//
//   - POSIX (Contents nil, the default): the tree is a directory per user
//     under Options.Root, as it always was (files.go, upload.go...).
//   - Tree + contents: the tree is rows of dav_nodes (tree.go, the
//     database every replica shares) and file contents are immutable
//     objects of a Contents (S3, or a local directory), named by keys that
//     never change once written (nodes.go). Renames, MOVE and listings are
//     database work only; a PUT writes a new object and swaps the node's
//     key in one transaction.
//
// Code outside the package reaches either through Handler.Stat and
// Handler.Open (access.go).

// Contents keeps file contents as immutable objects.
type Contents interface {
	// Kind names the store for logs ("s3", "dir").
	Kind() string
	// Put streams r into a new object at key and reports its size.
	// hooks.started receives a multipart upload's id before its first
	// part (so a crash leaves a record the sweep can abort), and
	// hooks.touch runs after every part. A failed Put leaves no object
	// and no multipart upload behind (as far as the store answers).
	Put(ctx context.Context, key string, r io.Reader, sizeHint int64, hooks PutHooks) (int64, error)
	// Get reads n bytes of key from off (n < 0: to the end).
	Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	// Delete removes key; a missing key is no error.
	Delete(ctx context.Context, key string) error
	// AbortUpload aborts the multipart upload id of key.
	AbortUpload(ctx context.Context, key, uploadID string) error
	// Scan lists up to limit objects and multipart uploads after the
	// cursor, for the sweep only (never on a request path); next is ""
	// at the end of the store.
	Scan(ctx context.Context, cursor string, limit int) (objs []StoredObject, next string, err error)
}

// PutHooks are the callbacks of Contents.Put.
type PutHooks struct {
	Started func(ctx context.Context, uploadID string) error
	Touch   func(ctx context.Context) error
}

// StoredObject is one object or multipart upload met by Contents.Scan.
type StoredObject struct {
	Key      string
	UploadID string // a multipart upload, not an object
	AgeNs    int64  // since it was written or initiated
}

// ErrNoObject: the key names no object.
var ErrNoObject = errors.New("no such object")

// ErrStoreUnavailable wraps failures to reach the object store; requests
// answer them with 503 and Retry-After.
var ErrStoreUnavailable = errors.New("object store unavailable")

// StoreURL is a parsed --webdav-store value (package storeurl, which
// config reads too).
type StoreURL = storeurl.URL

// ParseStoreURL reads "posix" or an s3:// URL (storeurl.Parse).
func ParseStoreURL(s string) (StoreURL, error) { return storeurl.Parse(s) }
