//go:build !linux && !darwin

package webdav

import (
	"errors"
	"os"

	"github.com/ontoflow/ontoflow/models"
)

// Elsewhere (Windows among them) no extended-attribute store is built:
// probeXattrs fails on setSum and checksums live in the database.

var errNoXattrs = errors.New("extended attributes are not used on this platform")

func setSum(*os.File, models.DavChecksum) error { return errNoXattrs }

func getSum(*os.File) (models.DavChecksum, bool) { return models.DavChecksum{}, false }

func getSumAt(*os.File, string) (models.DavChecksum, bool) { return models.DavChecksum{}, false }
