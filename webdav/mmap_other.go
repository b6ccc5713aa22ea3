//go:build !linux && !darwin

package webdav

import (
	"errors"
	"os"
)

var errNoMmap = errors.New("shared mappings are not used on this platform")

// mapShared is not built here: the change counters stay in the process,
// and the lock cache is off, as on Postgres (every write reads the locks).
func mapShared(*os.File, int) ([]byte, error) { return nil, errNoMmap }
