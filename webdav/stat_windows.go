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
