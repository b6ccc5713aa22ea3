package webdav

import (
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

// sumXattr names the attribute; the value is "1 <size> <mtime ns> <sha1> <md5>".
const sumXattr = "user.ontoflow.sum"

func encodeSum(s models.DavChecksum) []byte {
	b := make([]byte, 0, 110)
	b = append(b, "1 "...)
	b = strconv.AppendInt(b, s.Size, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, s.MtimeNs, 10)
	b = append(b, ' ')
	b = append(b, s.SHA1...)
	b = append(b, ' ')
	b = append(b, s.MD5...)
	return b
}

func decodeSum(b []byte) (models.DavChecksum, bool) {
	f := strings.Fields(string(b))
	if len(f) != 5 || f[0] != "1" || len(f[3]) != 40 || len(f[4]) != 32 {
		return models.DavChecksum{}, false
	}
	size, err1 := strconv.ParseInt(f[1], 10, 64)
	mtime, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || !isHex(f[3]) || !isHex(f[4]) {
		return models.DavChecksum{}, false
	}
	return models.DavChecksum{Size: size, MtimeNs: mtime, SHA1: f[3], MD5: f[4]}, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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
	return withFd(f, func(fd int) error {
		if err := unix.Fsetxattr(fd, sumXattr, encodeSum(s), 0); err != nil {
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

// setSumAt records s on the entry name in the open directory dir.
func setSumAt(dir *os.File, name string, s models.DavChecksum) error {
	p, err := atPath(dir, name)
	if err != nil {
		return err
	}
	if err := unix.Lsetxattr(p, sumXattr, encodeSum(s), 0); err != nil {
		return fmt.Errorf("set checksum attribute: %w", err)
	}
	return nil
}

// xattrsWork probes whether the data directory's filesystem keeps user
// extended attributes and whether /proc/self/fd resolves names under an
// open directory, which is all the attribute store needs.
func xattrsWork(root string) bool {
	f, err := os.CreateTemp(root, tmpPrefix+"probe-")
	if err != nil {
		return false
	}
	name := f.Name()
	defer os.Remove(name)
	defer f.Close()
	want := models.DavChecksum{Size: 0, MtimeNs: 1, SHA1: strings.Repeat("a", 40), MD5: strings.Repeat("b", 32)}
	if setSum(f, want) != nil {
		return false
	}
	d, err := os.Open(root)
	if err != nil {
		return false
	}
	defer d.Close()
	got, ok := getSumAt(d, filepath.Base(name))
	return ok && got == want
}
