package engine

import (
	"github.com/ontoflow/ontoflow/media"
)

// What a kind reads of the actor's files (a function's ctx.media, in
// engine/kinds/invokefunction), by media.go's rules: the kinds live
// outside the engine core, which keeps the pins' shape to itself.

// WithMedia gives op the users' files of store, as the engine gives every
// op it makes (publicURL: the server's public URL, "" for none); for an
// op built outside the engine, such as a kind's test.
func (op *Op) WithMedia(store media.Store, publicURL string) *Op {
	op.media = newMediaFiles(store, publicURL)
	return op
}

// MediaStore is the store of the users' files (nil: none in this process).
func (op *Op) MediaStore() media.Store { return op.media.store }

// MediaPath reports whether uri names a file of the WebDAV tree, and its
// path inside the tree.
func (op *Op) MediaPath(uri string) (string, bool) { return op.media.treePath(uri) }

// MediaPin is the pinned value of a reference uri to file f.
func (op *Op) MediaPin(uri string, f media.File) map[string]any { return op.media.pin(uri, f) }

// PinnedParam is the media_reference parameter of op whose pin (its
// value's, or an element's of an array) names the file at path p, and
// that pin ("", nil: none does, or op runs outside an action, such as a
// function's test run).
func (op *Op) PinnedParam(p string) (string, map[string]any) {
	if op.Action == nil {
		return "", nil
	}
	for _, field := range op.Action.Inputs {
		var pin map[string]any
		_ = eachPin(field.Type, op.Params[field.Name], func(m map[string]any) error {
			if m[pinPath] == p {
				pin = m
				return errPinFound
			}
			return nil
		})
		if pin != nil {
			return field.Name, pin
		}
	}
	return "", nil
}

// MediaURI is the URI of a media_reference value (a string, or an object
// with "uri" or "url").
func MediaURI(v any) (string, bool) { return mediaURI(v) }

// SamePin reports whether f is the version pin describes.
func SamePin(pin map[string]any, f media.File) bool { return samePin(pin, f) }
