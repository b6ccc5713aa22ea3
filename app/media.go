package app

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/webdav"
)

// mediaStore is m as the engine's store, nil when there is none (a nil
// *webdav.Media in the interface would not read as absent).
func mediaStore(m *webdav.Media) media.Store {
	if m == nil {
		return nil
	}
	return m
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
