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
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

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

// withFd runs fn on f's descriptor without switching f to blocking mode
// (which File.Fd would do).
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// setSum records s on the open file f.
func setSum(f *os.File, s models.DavChecksum) error {
	v, err := encodeSum(s)
	if err != nil {
		return err
	}
	return withFd(f, func(fd int) error {
		if err := unix.Fsetxattr(fd, sumXattr, v, 0); err != nil {
			return fmt.Errorf("set checksum attribute: %w", err)
		}
		return nil
	})
}

// getSum reads the checksum recorded on the open file f.
func getSum(f *os.File) (models.DavChecksum, bool) {
	var buf [128]byte
	var n int
	err := withFd(f, func(fd int) error {
		var err error
		n, err = unix.Fgetxattr(fd, sumXattr, buf[:])
		return err
	})
	if err != nil {
		return models.DavChecksum{}, false
	}
	return decodeSum(buf[:n])
}

// atPath names the entry name of the open directory dir for the *xattr
// system calls, which have no *at form before Linux 6.13: the /proc magic
// link resolves to the directory already opened inside the user's root,
// and name is a single component as ReadDir returned it, so nothing can
// lead out of the root. The l-variants act on a symlink itself, never its
// target.
func atPath(dir *os.File, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return "", errors.New("not a directory entry name")
	}
	var p string
	err := withFd(dir, func(fd int) error {
		p = "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
		return nil
	})
	return p, err
}

// getSumAt reads the checksum of the entry name in the open directory dir.
func getSumAt(dir *os.File, name string) (models.DavChecksum, bool) {
	p, err := atPath(dir, name)
	if err != nil {
		return models.DavChecksum{}, false
	}
	var buf [128]byte
	n, err := unix.Lgetxattr(p, sumXattr, buf[:])
	if err != nil {
		return models.DavChecksum{}, false
	}
	return decodeSum(buf[:n])
}

// probeXattrs checks whether the data directory's filesystem keeps user
// extended attributes and whether /proc/self/fd resolves names under an
// open directory, which is all the attribute store needs. The error says
// what failed.
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
		return errors.New("the attribute could not be read back through /proc/self/fd")
	}
	return nil
}

// xattrsWork reports whether probeXattrs succeeds.
func xattrsWork(root string) bool { return probeXattrs(root) == nil }
