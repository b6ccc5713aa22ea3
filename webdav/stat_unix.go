//go:build linux || darwin

package webdav

import (
	"io/fs"
	"syscall"
)

// fileID is the inode number (0 when unknown), part of the ETag.
func fileID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
