package webdav

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ontoflow/ontoflow/models"
)

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
