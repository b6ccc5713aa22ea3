//go:build !linux && !darwin && !windows

package webdav

import (
	"io/fs"
	"time"
)

// fileID is unknown here: ETags rest on modification time and size (an
// upload that keeps both, within the clock's resolution, keeps the tag).
func fileID(fs.FileInfo) uint64 { return 0 }

// birthTime is unknown here; creationdate falls back to the mtime.
func birthTime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }

// changeTime is unknown here.
func changeTime(fs.FileInfo) (int64, bool) { return 0, false }
