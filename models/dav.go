package models

import "time"

// davModels are the WebDAV records (locks, dead properties, checksums).
var davModels = []any{&DavLock{}, &DavProp{}, &DavChecksum{}}

// DavLock is a WebDAV write lock (RFC 4918 §6). Locks live in the database
// so they survive restarts and are shared by every API replica.
type DavLock struct {
	// Token is the lock token URI, "opaquelocktoken:<uuid>".
	Token string `gorm:"primaryKey;size:64"`
	// UserID owns the tree the lock is in.
	UserID string `gorm:"size:36;not null;index:idx_dav_locks_user_path,priority:1"`
	// Path is the locked resource, "/" for the user's root, else "/a/b".
	Path string `gorm:"not null;index:idx_dav_locks_user_path,priority:2"`
	// Infinite is Depth: infinity (else Depth: 0).
	Infinite bool `gorm:"not null;default:false"`
	// Shared is a shared lock (else exclusive).
	Shared bool `gorm:"not null;default:false"`
	// Owner is the client's DAV:owner element content, as XML.
	Owner string `gorm:"type:text"`
	// TimeoutSeconds is the granted timeout.
	TimeoutSeconds int64 `gorm:"not null;default:0"`
	// Expires is when the lock lapses (Unix seconds); timeouts are always
	// finite (capped by the server).
	Expires   int64 `gorm:"not null;index"`
	CreatedAt time.Time
}

// DavProp is a dead property (PROPPATCH) of a WebDAV resource.
type DavProp struct {
	UserID string `gorm:"primaryKey;size:36"`
	// Path of the resource, as in DavLock.
	Path string `gorm:"primaryKey"`
	// Space and Name are the property's XML namespace and local name.
	Space string `gorm:"primaryKey"`
	Name  string `gorm:"primaryKey"`
	// Value is the property's content as self-contained XML.
	Value string `gorm:"type:text"`
	// Lang is the xml:lang in scope at the property element when it was
	// set, which RFC 4918 §4.3 says must come back with the value.
	Lang string `gorm:"not null;default:''"`
}

// DavChecksum holds content hashes computed while a file was uploaded. It
// is valid while the file still has the recorded size and modification
// time (nanoseconds).
type DavChecksum struct {
	UserID  string `gorm:"primaryKey;size:36"`
	Path    string `gorm:"primaryKey"`
	Size    int64  `gorm:"not null"`
	MtimeNs int64  `gorm:"not null"`
	SHA1    string `gorm:"column:sha1;size:40"`
	MD5     string `gorm:"column:md5;size:32"`
}
