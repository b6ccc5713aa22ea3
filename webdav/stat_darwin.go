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
