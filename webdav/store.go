package webdav

import (
	"github.com/ontoflow/ontoflow/webdav/storeurl"
)

// The storage seam. A Handler keeps each user's tree in one of two ways,
// chosen once at assembly (Options.Contents):
//
//   - POSIX (Contents nil, the default): the tree is a directory per user
//     under Options.Root, as it always was (files.go, upload.go...).
//   - Tree + contents: the tree is rows of dav_nodes (tree.go, the
//     database every replica shares) and file contents are immutable
//     objects of a contents.Store (package contents: S3, or a local
//     directory), named by keys that never change once written
//     (nodes.go). Renames, MOVE and listings are database work only; a
//     PUT writes a new object and swaps the node's key in one
//     transaction.
//
// Code outside the package reaches either through Handler.Stat and
// Handler.Open (access.go).

// StoreURL is a parsed --webdav-store value (package storeurl, which
// config reads too).
type StoreURL = storeurl.URL

// ParseStoreURL reads "posix" or an s3:// URL (storeurl.Parse).
func ParseStoreURL(s string) (StoreURL, error) { return storeurl.Parse(s) }
