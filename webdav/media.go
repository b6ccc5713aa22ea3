package webdav

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ontoflow/ontoflow/media"
)

// Media references (docs/actions.md, "Media references") name a file in
// the actor's own tree. What reads them needs only this: the version of a
// file (to pin it) and its bytes. The seam is kept that narrow so another
// store (S3) can answer it without the rest of the WebDAV machinery.

// Media is the POSIX media.Store: each user's tree is Root/<user-id>,
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

// Stat implements media.Store.
func (m *Media) Stat(ctx context.Context, userID, p string) (media.File, error) {
	f, mf, err := m.open(ctx, userID, p)
	if err != nil {
		return media.File{}, err
	}
	f.Close()
	return mf, nil
}

// Open implements media.Store. The reader is the open file the
// description was taken from: a WebDAV PUT or MOVE replacing the file
// meanwhile (a rename) does not change what it reads.
func (m *Media) Open(ctx context.Context, userID, p string) (io.ReadCloser, media.File, error) {
	f, mf, err := m.open(ctx, userID, p)
	if err != nil {
		return nil, media.File{}, err
	}
	return f, mf, nil
}

// open opens p in userID's tree, refusing anything but a regular file, and
// describes it (hashing it unless this version's sum is remembered); the
// file is positioned at its start.
func (m *Media) open(ctx context.Context, userID, p string) (*os.File, media.File, error) {
	ip, ok := treePath(p)
	if !ok || ip == "/" || isReserved(ip) || !validUserID(userID) {
		return nil, media.File{}, media.ErrNoFile
	}
	root, err := os.OpenRoot(filepath.Join(m.root, userID))
	if err != nil {
		return nil, media.File{}, noMedia(err, "open the user's tree")
	}
	defer root.Close() // files opened through it stay open
	f, err := root.Open(rel(ip))
	if err != nil {
		return nil, media.File{}, noMedia(err, "open "+ip)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, media.File{}, noMedia(err, "stat "+ip)
	}
	mf := media.File{Path: ip, Size: fi.Size(), ModTime: fi.ModTime().UTC(), ETag: etagOf(fi)}
	key := userID + "\x00" + ip
	if v, ok := m.sums.Load(key); ok && v.(mediaSum).etag == mf.ETag {
		mf.SHA256 = v.(mediaSum).sha256
		return f, mf, nil
	}
	if mf.SHA256, err = hashFrom(ctx, f); err != nil {
		f.Close()
		return nil, media.File{}, fmt.Errorf("webdav media: hash %s: %w", ip, err)
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

// noMedia is media.ErrNoFile for the errors of a path (missing, not a folder,
// a symlink loop or escape, permission), and what happened otherwise.
func noMedia(err error, doing string) error {
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return media.ErrNoFile
	}
	return fmt.Errorf("webdav media: %s: %w", doing, err)
}

// validUserID is openRoot's rule for a user id that names a tree.
func validUserID(id string) bool {
	return id != "" && !strings.ContainsAny(id, `/\`) && id != "." && id != ".."
}
