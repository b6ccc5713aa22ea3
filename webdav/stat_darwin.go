package webdav

import (
	"io/fs"
	"syscall"
	"time"
)

// birthTime is the file's birth time, which macOS's stat reports.
func birthTime(fi fs.FileInfo) (time.Time, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Birthtimespec.Sec, st.Birthtimespec.Nsec), true
	}
	return time.Time{}, false
}

// changeTime is the inode change time in nanoseconds: set by the kernel
// at every write, rename and chtimes, never by a client.
func changeTime(fi fs.FileInfo) (int64, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctimespec.Sec*1e9 + st.Ctimespec.Nsec, true
	}
	return 0, false
}
