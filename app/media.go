package app

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/webdav"
	"github.com/ontoflow/ontoflow/webdav/contents"
)

// mediaFiles is the store media references read, the one the WebDAV
// handler serves: the data directory's trees in POSIX mode (store nil),
// dav_nodes and the contents store in tree mode (--webdav-store s3://...).
// The store is nil with the error (a nil pointer in the interface would
// not read as absent).
func (a *App) mediaFiles(store contents.Store) (media.Store, error) {
	if store != nil {
		m, err := webdav.NewTreeMedia(a.DB, store)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	m, err := webdav.NewMedia(filepath.Join(a.Cfg.DataDir, "files"), a.DB, a.Cfg.WebDAVChecksums == "db")
	if err != nil {
		return nil, err
	}
	return m, nil
}

// mediaCheck is the ontology's check of media_reference property values
// over m: a reference to a WebDAV file must name one the writer may read.
func mediaCheck(m media.Store, publicURL string) ontology.MediaCheck {
	var base *url.URL
	if u, err := url.Parse(strings.TrimRight(publicURL, "/")); err == nil && u.Scheme != "" && u.Host != "" {
		base = u
	}
	return func(ctx context.Context, userID, uri string) (bool, bool, error) {
		p, isFile := media.ReferencePath(uri, base)
		if !isFile {
			return false, false, nil
		}
		_, err := m.Stat(ctx, userID, p)
		if errors.Is(err, media.ErrNoFile) {
			return true, false, nil
		}
		return true, err == nil, err
	}
}
