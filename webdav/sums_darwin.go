package webdav

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ontoflow/ontoflow/models"
)

// On macOS extended attributes take no namespace prefix; the same name
// (user.ontoflow.sum) is used so a tree copied between systems keeps them.

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
