// Package contents holds the stores of file contents for the WebDAV tree
// mode: immutable objects named by keys that never change once written
// (S3 in production, a local directory for tests and single-machine
// trials). The tree itself (names, sizes, identities, which key a file
// points at, each object's lifecycle row) lives in the database and is
// webdav's business; a Store only moves bytes. Which Store is used is
// chosen at assembly (package app).
package contents

import (
	"context"
	"errors"
	"io"
	"sync"
)

// Store keeps file contents as immutable objects.
type Store interface {
	// Kind names the store for logs ("s3", "dir").
	Kind() string
	// Put streams r into a new object at key and reports its size.
	// hooks.Started receives a multipart upload's id before its first
	// part (so a crash leaves a record the sweep can abort), and
	// hooks.Touch runs after every part. A failed Put leaves no object
	// and no multipart upload behind (as far as the store answers).
	Put(ctx context.Context, key string, r io.Reader, sizeHint int64, hooks PutHooks) (int64, error)
	// Get reads n bytes of key from off (n < 0: to the end). The body
	// may implement Sender.
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

// PutHooks are the callbacks of Store.Put.
type PutHooks struct {
	Started func(ctx context.Context, uploadID string) error
	Touch   func(ctx context.Context) error
}

// StoredObject is one object or multipart upload met by Store.Scan.
type StoredObject struct {
	Key      string
	UploadID string // a multipart upload, not an object
	AgeNs    int64  // since it was written or initiated
}

// Sender is a body from Get that can send its bytes to w itself (over
// plain HTTP, S3's body is read off its own TCP connection, which lets
// w splice it to the client's socket: s3get.go).
type Sender interface {
	SendTo(w io.Writer, n int64) (int64, error)
}

// ErrNoObject: the key names no object.
var ErrNoObject = errors.New("no such object")

// ErrStoreUnavailable wraps failures to reach the object store; requests
// answer them with 503 and Retry-After.
var ErrStoreUnavailable = errors.New("object store unavailable")

// Fill reads into buf until it is full or r ends (io.EOF). Unlike
// io.ReadFull it passes r's own errors on unchanged: net/http ends a
// chunked body that was cut short with io.ErrUnexpectedEOF, and with no
// Content-Length to compare against, reading that as the body's end would
// publish the truncated upload.
func Fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// bufPool holds the 1 MiB copy buffers of the stores' copies.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}
