package webdav

import (
	"io/fs"
	"syscall"
	"time"
)

// fileID is 0 on Windows: the file index needs the file opened
// (GetFileInformationByHandle), which a listing must not cost. ETags rest
// on the modification time (100 ns on NTFS) and size there.
func fileID(fs.FileInfo) uint64 { return 0 }

// birthTime is the creation time NTFS keeps.
func birthTime(fi fs.FileInfo) (time.Time, bool) {
	if d, ok := fi.Sys().(*syscall.Win32FileAttributeData); ok {
		return time.Unix(0, d.CreationTime.Nanoseconds()), true
	}
	return time.Time{}, false
}

// changeTime: fs.FileInfo carries no change time on Windows (it needs the
// file opened), so tags there rest on mtime, size and the generation.
func changeTime(fs.FileInfo) (int64, bool) { return 0, false }
