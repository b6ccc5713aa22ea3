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
