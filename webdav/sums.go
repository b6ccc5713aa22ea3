package webdav

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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

// sumXattr names the attribute. Its value is binary, 53 bytes: a format
// byte (1), size and modification time in nanoseconds (big-endian int64),
// SHA-1 (20) and MD5 (16). Small enough that ext4 keeps it inside a
// 256-byte inode (about 90 bytes are free there for name, value and entry
// header); a text form would not fit and would cost every file an extra
// 4 KiB attribute block.
const sumXattr = "user.ontoflow.sum"

const sumLen = 1 + 8 + 8 + sha1.Size + md5.Size

func encodeSum(s models.DavChecksum) ([]byte, error) {
	b := make([]byte, sumLen)
	b[0] = 1
	binary.BigEndian.PutUint64(b[1:], uint64(s.Size))
	binary.BigEndian.PutUint64(b[9:], uint64(s.MtimeNs))
	if n, err := hex.Decode(b[17:17+sha1.Size], []byte(s.SHA1)); err != nil || n != sha1.Size {
		return nil, fmt.Errorf("encode checksum: bad SHA-1 %q", s.SHA1)
	}
	if n, err := hex.Decode(b[17+sha1.Size:], []byte(s.MD5)); err != nil || n != md5.Size {
		return nil, fmt.Errorf("encode checksum: bad MD5 %q", s.MD5)
	}
	return b, nil
}

func decodeSum(b []byte) (models.DavChecksum, bool) {
	if len(b) != sumLen || b[0] != 1 {
		return models.DavChecksum{}, false
	}
	return models.DavChecksum{
		Size:    int64(binary.BigEndian.Uint64(b[1:])),
		MtimeNs: int64(binary.BigEndian.Uint64(b[9:])),
		SHA1:    hex.EncodeToString(b[17 : 17+sha1.Size]),
		MD5:     hex.EncodeToString(b[17+sha1.Size:]),
	}, true
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

// xattrsWork reports whether probeXattrs succeeds.
func xattrsWork(root string) bool { return probeXattrs(root) == nil }
