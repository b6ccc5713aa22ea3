//go:build !linux && !darwin && !windows

package webdav

import "errors"

// freeBytes is not known here; quota-available-bytes is then 0 for users
// without a quota.
func freeBytes(string) (int64, error) {
	return 0, errors.New("free space is not known on this platform")
}
