package ontology

import "context"

// MediaCheck reports whether uri, a media_reference value's URI, names a
// file of userID's WebDAV tree (isFile) and whether that file exists and
// userID may read it (readable; one answer whatever the reason it does
// not). app builds it over the WebDAV media store.
type MediaCheck func(ctx context.Context, userID, uri string) (isFile, readable bool, err error)

// WithMedia makes writes for a reader (As) check media_reference property
// values that name WebDAV files: one naming no file the reader may read
// is refused as any invalid property value is (400, reason "media").
func WithMedia(c MediaCheck) Option { return func(s *Store) { s.media = c } }

// mediaCheck is the check of the store's reader (nil without a reader or
// a check: a write the engine checked itself, or no file store).
func (s *Store) mediaCheck(ctx context.Context) func(string) (bool, bool, error) {
	if s.media == nil || s.reader == nil {
		return nil
	}
	id := s.reader.ID
	return func(uri string) (bool, bool, error) { return s.media(ctx, id, uri) }
}
