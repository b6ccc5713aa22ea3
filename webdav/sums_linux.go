package webdav

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

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

// getSumAt reads the checksum of the entry name in the open directory dir:
// by getxattrat(2) (Linux 6.13) where the kernel has it, which costs what
// the entry's stat costs; else through atPath, whose walk of /proc costs
// two to three times that (a PROPFIND reads one record per file, for its
// ETag).
func getSumAt(dir *os.File, name string) (models.DavChecksum, bool) {
	var buf [128]byte
	n, err := getxattrat(dir, name, buf[:])
	if err != nil {
		return models.DavChecksum{}, false
	}
	return decodeSum(buf[:n])
}

// noGetxattrat is set once the kernel answered ENOSYS.
var noGetxattrat atomic.Bool

// xattrArgs is the kernel's struct xattr_args.
type xattrArgs struct {
	value uint64
	size  uint32
	flags uint32
}

var sumXattrBytes = append([]byte(sumXattr), 0)

// getxattrat reads the checksum attribute of dir's entry name (not
// following a symlink) into buf.
func getxattrat(dir *os.File, name string, buf []byte) (int, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return 0, errors.New("not a directory entry name")
	}
	if !noGetxattrat.Load() {
		p, err := unix.BytePtrFromString(name)
		if err != nil {
			return 0, err
		}
		args := xattrArgs{value: uint64(uintptr(unsafe.Pointer(&buf[0]))), size: uint32(len(buf))}
		var n uintptr
		var errno unix.Errno
		err = withFd(dir, func(fd int) error {
			n, _, errno = unix.Syscall6(unix.SYS_GETXATTRAT, uintptr(fd), uintptr(unsafe.Pointer(p)), unix.AT_SYMLINK_NOFOLLOW,
				uintptr(unsafe.Pointer(&sumXattrBytes[0])), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
			return nil
		})
		runtime.KeepAlive(buf)
		switch {
		case err != nil:
			return 0, err
		case errno == 0:
			return int(n), nil
		case errno != unix.ENOSYS:
			return 0, errno
		}
		noGetxattrat.Store(true)
	}
	p, err := atPath(dir, name)
	if err != nil {
		return 0, err
	}
	return unix.Lgetxattr(p, sumXattr, buf)
}
