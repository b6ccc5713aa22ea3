package webdav

import (
	"io/fs"
	"syscall"
	"time"
)

// birthTime is the inode change time: stat(2) has no birth time on Linux
// (statx has, but not through fs.FileInfo); Apache does the same.
func birthTime(fi fs.FileInfo) (time.Time, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), true
	}
	return time.Time{}, false
}

// changeTime is the inode change time in nanoseconds: set by the kernel
// at every write, rename and chtimes, never by a client.
func changeTime(fi fs.FileInfo) (int64, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec, true
	}
	return 0, false
}
