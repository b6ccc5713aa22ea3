//go:build linux || darwin

package webdav

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ontoflow/ontoflow/models"
)

// The checksum attribute on an open file is the same system call on Linux
// and macOS; reading it by directory entry differs (getSumAt, per OS).

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
