package webdav

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Media references (docs/actions.md, "Media references") name a file in
// the actor's own tree. What reads them needs only this: the version of a
// file (to pin it) and its bytes. The seam is kept that narrow so another
// store (S3) can answer it without the rest of the WebDAV machinery.

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

// MediaFile is one version of a file in a user's tree, as a reference to
// it is pinned.
type MediaFile struct {
	// Path is the file's path inside the user's tree ("/a/b.pdf").
	Path    string
	Size    int64
	ModTime time.Time
	// ETag is the ETag WebDAV serves for this version.
	ETag string
	// SHA256 is the hex SHA-256 of the content.
	SHA256 string
}

// ErrNoMedia is the answer for every path that does not name a regular
// file the user may read: missing, a folder, "..", a reserved name, a
// symlink leaving the tree, a user with no tree. Callers must not tell
// these apart (a reference must not probe someone else's files).
var ErrNoMedia = errors.New("webdav: no readable file at this path")

// MediaStore reads users' files for media references.
type MediaStore interface {
	// StatMedia describes the file at p in userID's tree, or ErrNoMedia.
	StatMedia(ctx context.Context, userID, p string) (MediaFile, error)
	// OpenMedia opens the file at p for reading and describes the version
	// the reader reads, or ErrNoMedia. The caller closes the reader.
	OpenMedia(ctx context.Context, userID, p string) (io.ReadCloser, MediaFile, error)
}

// Media is the POSIX MediaStore: each user's tree is Root/<user-id>,
// opened with os.Root as the WebDAV handler opens it, so no path, encoded
// traversal or symlink reaches outside it.
type Media struct {
	root string
	// sums remembers the SHA-256 of file versions already hashed
	// (user\x00path -> mediaSum), so checking a pin again does not read
	// the whole file again while its ETag stays the same.
	sums cappedMap
}

type mediaSum struct{ etag, sha256 string }

// maxMediaSums bounds Media's checksum memory (about 200 bytes each).
const maxMediaSums = 10000

// NewMedia returns the POSIX store over the WebDAV data directory root
// (the same directory as Options.Root).
func NewMedia(root string) (*Media, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("webdav media: root: %w", err)
	}
	m := &Media{root: abs}
	m.sums.max = maxMediaSums
	return m, nil
}

// StatMedia implements MediaStore.
func (m *Media) StatMedia(ctx context.Context, userID, p string) (MediaFile, error) {
	f, mf, err := m.open(ctx, userID, p)
	if err != nil {
		return MediaFile{}, err
	}
	f.Close()
	return mf, nil
}

// OpenMedia implements MediaStore. The reader is the open file the
// description was taken from: a WebDAV PUT or MOVE replacing the file
// meanwhile (a rename) does not change what it reads.
func (m *Media) OpenMedia(ctx context.Context, userID, p string) (io.ReadCloser, MediaFile, error) {
	f, mf, err := m.open(ctx, userID, p)
	if err != nil {
		return nil, MediaFile{}, err
	}
	return f, mf, nil
}

// open opens p in userID's tree, refusing anything but a regular file, and
// describes it (hashing it unless this version's sum is remembered); the
// file is positioned at its start.
func (m *Media) open(ctx context.Context, userID, p string) (*os.File, MediaFile, error) {
	ip, ok := treePath(p)
	if !ok || ip == "/" || isReserved(ip) || !validUserID(userID) {
		return nil, MediaFile{}, ErrNoMedia
	}
	root, err := os.OpenRoot(filepath.Join(m.root, userID))
	if err != nil {
		return nil, MediaFile{}, noMedia(err, "open the user's tree")
	}
	defer root.Close() // files opened through it stay open
	f, err := root.Open(rel(ip))
	if err != nil {
		return nil, MediaFile{}, noMedia(err, "open "+ip)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, MediaFile{}, noMedia(err, "stat "+ip)
	}
	mf := MediaFile{Path: ip, Size: fi.Size(), ModTime: fi.ModTime().UTC(), ETag: etagOf(fi)}
	key := userID + "\x00" + ip
	if v, ok := m.sums.Load(key); ok && v.(mediaSum).etag == mf.ETag {
		mf.SHA256 = v.(mediaSum).sha256
		return f, mf, nil
	}
	if mf.SHA256, err = hashFrom(ctx, f); err != nil {
		f.Close()
		return nil, MediaFile{}, fmt.Errorf("webdav media: hash %s: %w", ip, err)
	}
	m.sums.Store(key, mediaSum{etag: mf.ETag, sha256: mf.SHA256})
	return f, mf, nil
}

// hashFrom hashes f from its start and seeks back to it.
func hashFrom(ctx context.Context, f *os.File) (string, error) {
	h := sha256.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	if _, err := io.CopyBuffer(h, ctxReader{ctx: ctx, r: f}, *bp); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader stops a long hash when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// noMedia is ErrNoMedia for the errors of a path (missing, not a folder,
// a symlink loop or escape, permission), and what happened otherwise.
func noMedia(err error, doing string) error {
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return ErrNoMedia
	}
	return fmt.Errorf("webdav media: %s: %w", doing, err)
}

// validUserID is openRoot's rule for a user id that names a tree.
func validUserID(id string) bool {
	return id != "" && !strings.ContainsAny(id, `/\`) && id != "." && id != ".."
}
