//go:build linux || darwin

package webdav

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

var errNoMmap = errors.New("shared mappings are not used on this platform")

// mapShared maps the first size bytes of f read-write and shared between
// processes (the change counters, gen.go).
func mapShared(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}
