package engine

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/media"
)

// Media references to the actor's WebDAV files (docs/actions.md, "Media
// references"). A media_reference value naming a file of the actor's
// tree (webdav:/a/b.pdf, /webdav/a/b.pdf, or <public URL>/webdav/a/b.pdf)
// is resolved when the parameters are materialized and replaced by its
// pin: the path, size, SHA-256, ETag and modification time of the version
// validated. The validate step records the pinned parameters on the
// execution; the effect and run steps check the file is still that
// version (409 Conflict otherwise). Any other URL is left as it was.

// davPrefix is the URL path the WebDAV tree is served at.
const davPrefix = media.ReferencePrefix

// Members of a pinned media reference.
const (
	pinURI    = "uri"
	pinPath   = "path"
	pinSHA256 = "sha256"
	pinETag   = "etag"
	pinSize   = "size"
)

// mediaFiles is the engine's access to the users' trees (nil: no media
// references to WebDAV files in this process).
type mediaFiles struct {
	store media.Store
	// base is the server's public URL (nil: only webdav: and relative
	// references are recognized, and pins carry relative URLs).
	base *url.URL
}

// newMediaFiles parses the public URL; an unparsable one is treated as
// none (config validates it).
func newMediaFiles(store media.Store, publicURL string) mediaFiles {
	m := mediaFiles{store: store}
	if u, err := url.Parse(strings.TrimRight(publicURL, "/")); err == nil && u.Scheme != "" && u.Host != "" {
		m.base = u
	}
	return m
}

// mediaURI is the URI of a media_reference value (a string, or an object
// with "uri" or "url").
func mediaURI(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case map[string]any:
		u, ok := x[pinURI].(string)
		if !ok {
			u, ok = x["url"].(string)
		}
		return u, ok
	}
	return "", false
}

// treePath reports whether raw names a file of the WebDAV tree, and its
// path inside the tree (media.ReferencePath).
func (m mediaFiles) treePath(raw string) (string, bool) {
	return media.ReferencePath(raw, m.base)
}

// url is the link to a file of the tree: absolute under the public URL
// when one is configured. It needs the reader's own credentials (WebDAV
// takes Basic authentication only); no token is ever put in it.
func (m mediaFiles) url(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	rel := davPrefix + "/" + strings.Join(segs, "/")
	if m.base == nil {
		return rel
	}
	return strings.TrimRight(m.base.String(), "/") + rel
}

// pin is the pinned value of a reference raw to file f.
func (m mediaFiles) pin(raw string, f media.File) map[string]any {
	name := path.Base(f.Path)
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	return map[string]any{pinURI: raw, pinPath: f.Path, "name": name, pinSize: f.Size, pinSHA256: f.SHA256,
		pinETag: f.ETag, "modified": f.ModTime.UTC().Format(time.RFC3339Nano), "url": m.url(f.Path), "content_type": ct}
}

// mediaRefused is the one message of a reference to no file the actor may
// read: the same whatever the reason (missing, someone else's, a folder,
// a traversal), so that the answer probes nothing.
func mediaRefused(name string) string {
	return fmt.Sprintf("parameter %q: expected a file of your WebDAV tree that exists and that you may read", name)
}

// resolveMedia pins the WebDAV references among params (materialize's
// last step), marking an unresolvable one invalid: a media_reference
// input, or each element of an array of them. One element naming no file
// the actor may read makes the whole parameter invalid, with the one
// message of a top-level reference (the answer does not say which
// element, nor why). With keepPins, a value already pinned (the validate
// step's, read back from the row) is kept: checkPins compares it with the
// file.
func (e *Engine) resolveMedia(ctx context.Context, in *input, params map[string]any, v *Validation) {
	for i, field := range in.Action.Inputs {
		if !holdsMedia(field.Type) || i >= len(v.Parameters) || v.Parameters[i].Result != Valid {
			continue
		}
		val, ok := params[field.Name]
		if !ok {
			continue
		}
		pr := &v.Parameters[i]
		pinned, dav, err := e.pinValue(ctx, in, field.Type, val)
		if err != nil {
			msg := mediaRefused(field.Name)
			if !errors.Is(err, media.ErrNoFile) {
				e.log.ErrorContext(ctx, "media reference", "parameter", field.Name, "err", err)
				msg = fmt.Sprintf("parameter %q: the file could not be read now", field.Name)
			}
			pr.Result, pr.Value = Invalid, nil
			pr.Constraints = append(pr.Constraints, Constraint{Type: "media", Result: Invalid, Message: msg})
			v.Result = Invalid
			continue
		}
		if !dav {
			continue
		}
		params[field.Name] = pinned
		pr.Value = pinned
		pr.Constraints = append(pr.Constraints, Constraint{Type: "media", Result: Valid})
	}
}

// holdsMedia reports whether values of t are media references or arrays
// (of arrays) of them: the types whose values resolveMedia pins.
func holdsMedia(t domain.PropertyType) bool {
	for t.Base == domain.TypeArray && t.ElementType != nil {
		t = *t.ElementType
	}
	return t.Base == domain.TypeMediaReference
}

// pinValue is val, a type-checked value of t, with each reference to a
// file of the actor's tree replaced by its pin; dav reports whether it
// held one. The first reference naming no readable file ends it with
// media.ErrNoFile (or the store's error). An array is copied, never
// changed in place.
func (e *Engine) pinValue(ctx context.Context, in *input, t domain.PropertyType, val any) (any, bool, error) {
	if t.Base == domain.TypeArray && t.ElementType != nil {
		items, ok := val.([]any)
		if !ok {
			return val, false, nil
		}
		out := make([]any, len(items))
		var dav bool
		for i, x := range items {
			p, d, err := e.pinValue(ctx, in, *t.ElementType, x)
			if err != nil {
				return nil, true, err
			}
			out[i], dav = p, dav || d
		}
		return out, dav, nil
	}
	raw, isURI := mediaURI(val)
	if t.Base != domain.TypeMediaReference || !isURI {
		return val, false, nil
	}
	p, dav := e.media.treePath(raw)
	if !dav {
		return val, false, nil
	}
	if m, pinned := val.(map[string]any); pinned && in.keepPins && m[pinSHA256] != nil {
		return val, true, nil
	}
	f, err := e.statMedia(ctx, in, p)
	if err != nil {
		return nil, true, err
	}
	return e.media.pin(raw, f), true, nil
}

// eachPin calls fn with every pinned reference of val, a value of t (a
// media reference, or an array of them), until fn fails.
func eachPin(t domain.PropertyType, val any, fn func(pin map[string]any) error) error {
	if t.Base == domain.TypeArray && t.ElementType != nil {
		items, _ := val.([]any)
		for _, x := range items {
			if err := eachPin(*t.ElementType, x, fn); err != nil {
				return err
			}
		}
		return nil
	}
	if m, ok := val.(map[string]any); ok && t.Base == domain.TypeMediaReference && m[pinSHA256] != nil {
		return fn(m)
	}
	return nil
}

// statMedia describes the file at p of the actor's tree. A guest has no
// tree (WebDAV refuses bearer sessions), so nothing is readable for one.
func (e *Engine) statMedia(ctx context.Context, in *input, p string) (media.File, error) {
	if e.media.store == nil || in.Guest || in.Actor == nil {
		return media.File{}, media.ErrNoFile
	}
	return e.media.store.Stat(ctx, in.Actor.ID, p)
}

// errPinFound stops eachPin at the first pin (hasPins).
var errPinFound = errors.New("pinned")

// hasPins reports whether params hold a pinned WebDAV reference.
func hasPins(at *ActionType, params map[string]any) bool {
	for _, field := range at.Inputs {
		found := func(map[string]any) error { return errPinFound }
		if holdsMedia(field.Type) && eachPin(field.Type, params[field.Name], found) != nil {
			return true
		}
	}
	return false
}

// checkPins refuses, with 409 Conflict naming the parameter, an execution
// whose pinned file (a parameter's, or one element's of an array) is no
// longer the version validated (changed, moved, deleted): the operation
// would otherwise act on other bytes than the record says. Called by the
// effect and run steps before the operation.
func (e *Engine) checkPins(ctx context.Context, in *input) error {
	for _, field := range in.Action.Inputs {
		if !holdsMedia(field.Type) {
			continue
		}
		err := eachPin(field.Type, in.Params[field.Name], func(m map[string]any) error {
			p, _ := m[pinPath].(string)
			f, err := e.statMedia(ctx, in, p)
			if err != nil && !errors.Is(err, media.ErrNoFile) {
				return fmt.Errorf("check the file of parameter %s: %w", field.Name, err)
			}
			if err != nil || !samePin(m, f) {
				return apperr.New(apperr.Conflict, "parameter %q: the file %s changed after the action was validated; nothing was applied", field.Name, p).
					WithDetails(apperr.Detail{Field: "parameters." + field.Name, Reason: "stale_media", Message: "the file changed since it was validated"})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// samePin reports whether f is the version pin describes.
func samePin(pin map[string]any, f media.File) bool {
	size, ok := domain.AsFloat(pin[pinSize])
	return pin[pinSHA256] == f.SHA256 && pin[pinETag] == f.ETag && ok && int64(size) == f.Size
}
