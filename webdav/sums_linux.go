package webdav

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ontoflow/ontoflow/models"
)

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
