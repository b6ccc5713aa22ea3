package webdav

import (
	"github.com/ontoflow/ontoflow/webdav/storeurl"
)

// The storage seam is backend.go: a Handler keeps each user's tree in one
// of two ways, chosen once at assembly (Options.Contents): posixBackend,
// a directory per user under Options.Root (Contents nil, the default), or
// nodeBackend, rows of dav_nodes over the immutable objects of a
// contents.Store. Code outside the package reaches either through
// Handler.Stat, Open and ReadDir (access.go).

// StoreURL is a parsed --webdav-store value (package storeurl, which
// config reads too).
type StoreURL = storeurl.URL

// ParseStoreURL reads "posix" or an s3:// URL (storeurl.Parse).
func ParseStoreURL(s string) (StoreURL, error) { return storeurl.Parse(s) }
