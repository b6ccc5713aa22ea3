package webdav

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// Content checksums live with the file where the filesystem allows it: in
// the extended attribute user.ontoflow.sum, set on the temporary file of an
// upload before the rename that publishes it. The checksum then appears
// atomically with the content, follows the file through MOVE for free,
// vanishes with DELETE, is shared by every replica that shares the data
// directory, and a small upload writes nothing to the database. Where user
// extended attributes are not supported (probed at start), or when
// Options.ChecksumsInDB asks for it, they are kept in the dav_checksums
// table instead.
//
// Either way a checksum is valid only while the file keeps the size and
// modification time it was computed for, so content changed behind the
// server's back is never published with a stale hash.

// sumXattr names the attribute. Its value is binary, 57 bytes: a format
// byte (2), size and modification time in nanoseconds (big-endian int64),
// the version's generation (big-endian uint32, identity.go), SHA-1 (20)
// and MD5 (16), both all zeros until a large upload is hashed. Small
// enough that ext4 keeps it inside a 256-byte inode (88 bytes are free
// there for the entry header, the name "ontoflow.sum" and the value
// padded to 4: 16 + 12 + 60); a text form, or an 8-byte generation, would
// not fit and would cost every file an extra 4 KiB attribute block.
// Format 1 (53 bytes, no generation) is still read.
const sumXattr = "user.ontoflow.sum"

const (
	sumLenV1 = 1 + 8 + 8 + sha1.Size + md5.Size
	sumLen   = 1 + 8 + 8 + 4 + sha1.Size + md5.Size
)

func encodeSum(s models.DavChecksum) ([]byte, error) {
	b := make([]byte, sumLen)
	b[0] = 2
	binary.BigEndian.PutUint64(b[1:], uint64(s.Size))
	binary.BigEndian.PutUint64(b[9:], uint64(s.MtimeNs))
	binary.BigEndian.PutUint32(b[17:], uint32(s.Gen))
	if s.SHA1 == "" && s.MD5 == "" {
		return b, nil // not hashed yet: zeros
	}
	h := b[21:]
	if n, err := hex.Decode(h[:sha1.Size], []byte(s.SHA1)); err != nil || n != sha1.Size {
		return nil, fmt.Errorf("encode checksum: bad SHA-1 %q", s.SHA1)
	}
	if n, err := hex.Decode(h[sha1.Size:], []byte(s.MD5)); err != nil || n != md5.Size {
		return nil, fmt.Errorf("encode checksum: bad MD5 %q", s.MD5)
	}
	return b, nil
}

func decodeSum(b []byte) (models.DavChecksum, bool) {
	var s models.DavChecksum
	var h []byte
	switch {
	case len(b) == sumLen && b[0] == 2:
		s.Gen = int64(binary.BigEndian.Uint32(b[17:]))
		h = b[21:]
	case len(b) == sumLenV1 && b[0] == 1:
		h = b[17:]
	default:
		return s, false
	}
	s.Size = int64(binary.BigEndian.Uint64(b[1:]))
	s.MtimeNs = int64(binary.BigEndian.Uint64(b[9:]))
	if !allZero(h) {
		s.SHA1 = hex.EncodeToString(h[:sha1.Size])
		s.MD5 = hex.EncodeToString(h[sha1.Size:])
	}
	return s, true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// sumValid reports whether s was computed for the file fi describes.
func sumValid(s models.DavChecksum, fi fs.FileInfo) bool {
	return s.Size == fi.Size() && s.MtimeNs == fi.ModTime().UnixNano()
}

// probeXattrs checks whether the data directory's filesystem keeps user
// extended attributes and whether they can be read for an entry of an
// open directory (sums_<os>.go), which is all the attribute store needs.
// The error says what failed; where it fails, checksums go to the
// database.
func probeXattrs(root string) error {
	f, err := os.CreateTemp(root, tmpPrefix+"probe-")
	if err != nil {
		return err
	}
	name := f.Name()
	defer os.Remove(name)
	defer f.Close()
	want := models.DavChecksum{Size: 0, MtimeNs: 1, SHA1: strings.Repeat("a", 40), MD5: strings.Repeat("b", 32)}
	if err := setSum(f, want); err != nil {
		return err
	}
	d, err := os.Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	if got, ok := getSumAt(d, filepath.Base(name)); !ok || got != want {
		return errors.New("the attribute could not be read back by directory entry")
	}
	return nil
}

// xattrStore keeps checksums in the attribute and everything else as
// dbStore does; only the checksum methods differ.
type xattrStore struct {
	*dbStore
	log *slog.Logger
	// seen remembers the records listings read (user\x00path ->
	// seenRecord), so a folder listed again costs no attribute read per
	// file: an entry is used only while the file's stat (inode, mtime,
	// size and change time, which every write, rename, chtimes and
	// attribute change moves) is the one it was read with.
	seen cappedMap
}

// seenRecord is one remembered record and the stat it was read at.
type seenRecord struct {
	stat string // statKey
	rec  models.DavChecksum
	ok   bool
}

// maxSeenRecords bounds xattrStore.seen (a few hundred bytes an entry):
// a folder of 10,000 files listed again and again stays remembered.
const maxSeenRecords = 20000

func (s *xattrStore) kind() string { return "extended attributes" }

// sumsFor reads the checksums the files of batch carry: one system call
// per file when the directory is open, else the file is opened.
func (s *xattrStore) sumsFor(_ context.Context, root *os.Root, userID string, dir *os.File, batch []entry) (map[string]models.DavChecksum, error) {
	out := make(map[string]models.DavChecksum, len(batch))
	for _, e := range batch {
		if !e.fi.Mode().IsRegular() {
			continue
		}
		key, stat := userID+"\x00"+e.path, statKey(e.fi)
		if v, hit := s.seen.Load(key); hit && v.(seenRecord).stat == stat {
			if r := v.(seenRecord); r.ok {
				out[e.path] = r.rec
			}
			continue
		}
		var sum models.DavChecksum
		var ok bool
		if dir != nil && !e.link {
			sum, ok = getSumAt(dir, pathBase(e.path))
		} else if f, err := root.Open(rel(e.path)); err == nil {
			sum, ok = getSum(f)
			f.Close()
		}
		s.seen.Store(key, seenRecord{stat: stat, rec: sum, ok: ok})
		if ok {
			out[e.path] = sum
		}
	}
	return out, nil
}

// recordOf reads the attribute of the open file.
func (s *xattrStore) recordOf(_ context.Context, _, _ string, f *os.File) (models.DavChecksum, bool, error) {
	rec, ok := getSum(f)
	return rec, ok, nil
}

// etag needs no change time: the attribute is set on the temporary before
// the rename, so a version and its generation appear together (and
// hashing it later, which moves the change time, keeps its tag).
func (s *xattrStore) etag(fi fs.FileInfo, rec models.DavChecksum, ok bool) string {
	return posixETag(fi, rec, ok, false)
}

// sealUpload sets the attribute on the temporary, so the checksum appears
// with the content at the rename.
func (s *xattrStore) sealUpload(f *os.File, sum *models.DavChecksum) error {
	if sum == nil {
		return nil
	}
	if err := setSum(f, *sum); err != nil {
		// The upload matters more than its checksum: the file publishes
		// none and is hashed again later.
		s.log.Warn("webdav checksum", "path", sum.Path, "err", err)
	}
	return nil
}

// commitUpload has nothing to record: the checksum travels with the file.
// Only a new path needs the check for properties a vanished file left.
func (s *xattrStore) commitUpload(ctx context.Context, c uploadCommit) error {
	if c.created {
		if err := s.dropStaleProps(ctx, c.userID, c.path); err != nil {
			return err
		}
	}
	if err := c.publish(); err != nil {
		return err
	}
	*c.published = true
	// Its stat differs from the old file's anyway; this only spares the
	// memory.
	s.seen.Delete(c.userID + "\x00" + c.path)
	return nil
}

// errSumNotSet: the attribute could not be set on a file (a read-only
// file put there out of band, say: it needs write permission).
var errSumNotSet = errors.New("checksum attribute not set")

// recordSum sets the attribute on the very inode that was read: if the
// path was replaced meanwhile, it goes with the old file, harmlessly.
func (s *xattrStore) recordSum(_ context.Context, _ *os.Root, f *os.File, before fs.FileInfo, sum models.DavChecksum, _ *models.DavChecksum) error {
	now, err := f.Stat()
	if err != nil || statKey(now) != statKey(before) {
		return nil
	}
	if err := setSum(f, sum); err != nil {
		return fmt.Errorf("%w: %w", errSumNotSet, err)
	}
	return nil
}

// copySum: same content, size and modification time, so the checksum
// holds for the copy.
func (s *xattrStore) copySum(in, out *os.File, fi fs.FileInfo) error {
	if sum, ok := getSum(in); ok && sumValid(sum, fi) {
		return setSum(out, sum)
	}
	return nil
}

// chtimes moves a valid attribute along with the modification time.
func (s *xattrStore) chtimes(_ *gorm.DB, root *os.Root, _, p string, fi fs.FileInfo, mtime time.Time) error {
	var sum models.DavChecksum
	var f *os.File
	ok := false
	if fi.Mode().IsRegular() {
		var err error
		if f, err = root.Open(rel(p)); err == nil {
			defer f.Close()
			sum, ok = getSum(f)
			ok = ok && sumValid(sum, fi)
		}
	}
	if err := root.Chtimes(rel(p), mtime, mtime); err != nil {
		return err
	}
	if !ok {
		return nil
	}
	sum.MtimeNs = mtime.UnixNano()
	if err := setSum(f, sum); err != nil {
		// The old attribute no longer matches the new mtime, so nothing
		// stale is published; the file is hashed again when asked.
		s.log.Warn("webdav checksum", "path", p, "err", err)
	}
	return nil
}

// propTables: the attribute follows the files by itself, so only the
// dead properties' rows move with the resources (and dav_checksums, kept
// empty by New, is never touched per request).
var propTables = []string{"dav_props"}

func (s *xattrStore) dropTx(tx *gorm.DB, userID, p string) error {
	return dropRows(tx, propTables, userID, p)
}

func (s *xattrStore) moveTx(tx *gorm.DB, userID, src, dst string) error {
	return moveRows(tx, propTables, userID, src, dst)
}

func (s *xattrStore) copyTx(tx *gorm.DB, userID, src, dst string, infinite bool) error {
	return copyProps(tx, userID, src, dst, infinite)
}

// xattrsWork reports whether probeXattrs succeeds.
func xattrsWork(root string) bool { return probeXattrs(root) == nil }
