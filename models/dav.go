package models

import "time"

// davModels are the WebDAV records (locks, dead properties, checksums, and
// the tree and blobs of the object-storage mode).
var davModels = []any{&DavLock{}, &DavProp{}, &DavChecksum{}, &DavNode{}, &DavBlob{}}

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

// DavChecksum is the record of one written version of a POSIX file: its
// generation (drawn at the write, part of the ETag; 0 in rows written
// before generations existed) and its content hashes (empty until a large
// upload is hashed). It is valid while the file still has the recorded
// size and modification time (nanoseconds).
type DavChecksum struct {
	UserID  string `gorm:"primaryKey;size:36"`
	Path    string `gorm:"primaryKey"`
	Size    int64  `gorm:"not null"`
	MtimeNs int64  `gorm:"not null"`
	SHA1    string `gorm:"column:sha1;size:40"`
	MD5     string `gorm:"column:md5;size:32"`
	Gen     int64  `gorm:"not null;default:0"`
}

// DavNode is one file or collection of a user's tree when WebDAV contents
// live in object storage (--webdav-store s3://...): the tree is these rows,
// the bytes are immutable objects named by Blob. A rename or MOVE changes
// one row, whatever lies below it.
type DavNode struct {
	ID     int64  `gorm:"primaryKey;autoIncrement"`
	UserID string `gorm:"size:36;not null;uniqueIndex:idx_dav_nodes_name,priority:1;index:idx_dav_nodes_recent,priority:1"`
	// ParentID is the collection holding the node; 0 for a user's root.
	ParentID int64  `gorm:"not null;uniqueIndex:idx_dav_nodes_name,priority:2"`
	Name     string `gorm:"not null;uniqueIndex:idx_dav_nodes_name,priority:3"`
	Dir      bool   `gorm:"not null;default:false;index:idx_dav_nodes_recent,priority:2"`
	Size     int64  `gorm:"not null;default:0"`
	// idx_dav_nodes_recent serves a user's most recently modified files
	// (webdav.Handler.Recent).
	MtimeNs int64 `gorm:"not null;default:0;index:idx_dav_nodes_recent,priority:3"`
	// CreatedNs is the creation time (creationdate).
	CreatedNs int64  `gorm:"not null;default:0"`
	SHA1      string `gorm:"column:sha1;size:40"`
	MD5       string `gorm:"column:md5;size:32"`
	SHA256    string `gorm:"column:sha256;size:64"`
	// Blob is the object key of the contents ("" for an empty file or a
	// collection); several nodes may share one (COPY).
	Blob string `gorm:"column:blob_key;size:200;index"`
	// Version grows with every change of the node; the ETag carries it and
	// a write commits only over the version it started from.
	Version int64 `gorm:"not null;default:1"`
}

// DavBlob is an object in the bucket the tree may reference: written by an
// upload (State "uploading" until the node commit makes it "live"), and
// reclaimed ("deleting", then gone) once no node references it.
type DavBlob struct {
	Key      string `gorm:"column:blob_key;primaryKey;size:200"`
	UserID   string `gorm:"size:36;not null"`
	State    string `gorm:"size:16;not null;index:idx_dav_blobs_state,priority:1"`
	UploadID string `gorm:"size:1024"`
	Size     int64  `gorm:"not null;default:0"`
	// TouchedNs is the last sign of life of an upload (every part), or
	// when the blob went live or was last shared; the sweep leaves alone
	// what was touched within its grace period.
	TouchedNs int64 `gorm:"not null;default:0;index:idx_dav_blobs_state,priority:2"`
}
