package webdav

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/models"
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
	// recs reads a version's record, as the WebDAV handler's metadata
	// store keeps it: the tag a pin records, and the key of sums, is the
	// handler's, which no client can make two contents share.
	recs records
	// sums remembers the SHA-256 of file versions already hashed
	// (user\x00path -> mediaSum), so checking a pin again does not read
	// the whole file again while its ETag stays the same.
	sums cappedMap
}

type mediaSum struct{ etag, sha256 string }

// maxMediaSums bounds Media's checksum memory (about 200 bytes each).
const maxMediaSums = 10000

// records is the part of the metadata store media references read.
type records interface {
	recordOf(ctx context.Context, userID, p string, f *os.File) (models.DavChecksum, bool, error)
	etag(fi fs.FileInfo, rec models.DavChecksum, ok bool) string
}

// NewMedia returns the POSIX store over the WebDAV data directory root
// (the same directory as Options.Root), reading versions' records where
// the handler keeps them: on the files where the directory keeps extended
// attributes (probed, as the handler does) unless checksumsInDB, else in
// db.
func NewMedia(root string, db *gorm.DB, checksumsInDB bool) (*Media, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("webdav media: root: %w", err)
	}
	var recs records = newDBStore(db, nil)
	if !checksumsInDB && xattrsWork(abs) {
		recs = &xattrStore{dbStore: newDBStore(db, nil)} // reads records one file at a time: no listing memory
	}
	m := &Media{root: abs, recs: recs}
	m.sums.max = maxMediaSums
	return m, nil
}

// Stat implements media.Store.
func (m *Media) Stat(ctx context.Context, userID, p string) (media.File, error) {
	f, mf, _, err := m.open(ctx, userID, p)
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
	f, mf, remembered, err := m.open(ctx, userID, p)
	if err != nil {
		return nil, media.File{}, err
	}
	if remembered {
		// The digest was not taken from these bytes: check it against
		// what the caller reads (a change behind the server's back that
		// kept size, mtime and record would otherwise go unseen).
		return &verifyingReader{f: f, h: sha256.New(), want: mf.SHA256, path: mf.Path}, mf, nil
	}
	return f, mf, nil
}

// verifyingReader hashes what is read of a file and, at its end, fails
// the read instead of answering io.EOF if the bytes are not the ones the
// description's SHA-256 names.
type verifyingReader struct {
	f    *os.File
	h    hash.Hash
	want string
	path string
}

func (v *verifyingReader) Read(b []byte) (int, error) {
	n, err := v.f.Read(b)
	v.h.Write(b[:n])
	if err == io.EOF && hex.EncodeToString(v.h.Sum(nil)) != v.want {
		return n, fmt.Errorf("webdav media: %s changed while it was read (its bytes no longer have the SHA-256 pinned)", v.path)
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.f.Close() }

// open opens p in userID's tree, refusing anything but a regular file, and
// describes it (hashing it unless this version's sum is remembered:
// remembered says so); the file is positioned at its start.
func (m *Media) open(ctx context.Context, userID, p string) (_ *os.File, _ media.File, remembered bool, _ error) {
	ip, ok := treePath(p)
	if !ok || ip == "/" || isReserved(ip) || !validUserID(userID) {
		return nil, media.File{}, false, media.ErrNoFile
	}
	root, err := os.OpenRoot(filepath.Join(m.root, userID))
	if err != nil {
		return nil, media.File{}, false, noMedia(err, "open the user's tree")
	}
	defer root.Close() // files opened through it stay open
	f, err := root.Open(rel(ip))
	if err != nil {
		return nil, media.File{}, false, noMedia(err, "open "+ip)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, media.File{}, false, noMedia(err, "stat "+ip)
	}
	rec, recOK, err := m.recs.recordOf(ctx, userID, ip, f)
	if err != nil {
		f.Close()
		return nil, media.File{}, false, fmt.Errorf("webdav media: %s: %w", ip, err)
	}
	mf := media.File{Path: ip, Size: fi.Size(), ModTime: fi.ModTime().UTC(), ETag: m.recs.etag(fi, rec, recOK)}
	key := userID + "\x00" + ip
	if v, ok := m.sums.Load(key); ok && v.(mediaSum).etag == mf.ETag {
		mf.SHA256 = v.(mediaSum).sha256
		return f, mf, true, nil
	}
	if mf.SHA256, err = hashFrom(ctx, f); err != nil {
		f.Close()
		return nil, media.File{}, false, fmt.Errorf("webdav media: hash %s: %w", ip, err)
	}
	m.sums.Store(key, mediaSum{etag: mf.ETag, sha256: mf.SHA256})
	return f, mf, false, nil
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
