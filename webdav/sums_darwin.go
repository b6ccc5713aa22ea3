package webdav

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ontoflow/ontoflow/models"
)

// On macOS extended attributes take no namespace prefix; the same name
// (user.ontoflow.sum) is used so a tree copied between systems keeps them.

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

// getSumAt reads the checksum of the entry name in the open directory dir.
// macOS has neither *xattrat calls nor /proc, and a path from F_GETPATH
// could be swapped for a symlink under the server: the entry is opened
// relative to dir without following a symlink (one open per file, where
// Linux needs none) and read through its descriptor.
func getSumAt(dir *os.File, name string) (models.DavChecksum, bool) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return models.DavChecksum{}, false
	}
	var buf [128]byte
	n := -1
	_ = withFd(dir, func(dfd int) error {
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		n, err = unix.Fgetxattr(fd, sumXattr, buf[:])
		if err != nil {
			n = -1
		}
		return err
	})
	if n < 0 {
		return models.DavChecksum{}, false
	}
	return decodeSum(buf[:n])
}
