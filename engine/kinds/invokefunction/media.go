package invokefunction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/functions/runtime"
	"github.com/ontoflow/ontoflow/media"
)

// ctx.media in functions (docs/functions.md, "Files"): the actor's files,
// by the actor's read rule (their own tree only), at the version the
// execution pinned when the reference is one of its parameters. A read
// that finds other bytes than pinned fails the run with 409 Conflict,
// however the function handled it.

var _ runtime.MediaHost = (*functionHost)(nil)

// mediaRef resolves a reference a function passed: its path in the tree,
// and the pin of the parameter naming the same file (nil: none does).
func (h *functionHost) mediaRef(ref any) (string, string, map[string]any, error) {
	raw, ok := engine.MediaURI(ref)
	if !ok {
		return "", "", nil, errors.New("ctx.media: expected a media reference (a string or a parameter's value)")
	}
	p, dav := h.op.MediaPath(raw)
	if !dav {
		return "", "", nil, fmt.Errorf("ctx.media: %q is not a file of your WebDAV tree (webdav:/path)", clipRef(raw))
	}
	param, pin := h.op.PinnedParam(p)
	return p, param, pin, nil
}

func clipRef(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// mediaSaw records a file read, and a pinned one found changed.
func (h *functionHost) mediaSaw(param string, pin map[string]any, f media.File) error {
	if h.media == nil {
		h.media = map[string]string{}
	}
	if len(h.media) >= functionReadsMax {
		return fmt.Errorf("a function may read at most %d files per run", functionReadsMax)
	}
	h.media[f.Path] = f.SHA256
	if pin != nil && !engine.SamePin(pin, f) {
		if h.staleMedia == "" {
			h.staleMedia = param
		}
		return fmt.Errorf("ctx.media: the file of parameter %q changed after the action was validated", param)
	}
	return nil
}

// mediaConflict is the run's failure when a pinned file was found changed.
func (h *functionHost) mediaConflict() error {
	if h.staleMedia == "" {
		return nil
	}
	return apperr.New(apperr.Conflict, "parameter %q: the file changed after the action was validated; the function's run was discarded", h.staleMedia).
		WithDetails(apperr.Detail{Field: "parameters." + h.staleMedia, Reason: "stale_media", Message: "the file changed since it was validated"})
}

// mediaStore is the store of the actor's files (media.ErrNoFile: none).
func (h *functionHost) mediaStore() (media.Store, error) {
	if h.op.MediaStore() == nil || h.op.Actor == nil {
		return nil, media.ErrNoFile
	}
	return h.op.MediaStore(), nil
}

// MediaStat implements runtime.MediaHost.
func (h *functionHost) MediaStat(ctx context.Context, ref any) (any, error) {
	p, param, pin, err := h.mediaRef(ref)
	if err != nil {
		return nil, err
	}
	store, err := h.mediaStore()
	if err == nil {
		var f media.File
		if f, err = store.Stat(ctx, h.op.Actor.ID, p); err == nil {
			if err := h.mediaSaw(param, pin, f); err != nil {
				return nil, err
			}
			return h.op.MediaPin(raw(ref), f), nil
		}
	}
	if errors.Is(err, media.ErrNoFile) {
		if pin != nil {
			h.staleMedia = param
			return nil, fmt.Errorf("ctx.media: the file of parameter %q is gone since the action was validated", param)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("ctx.media.stat: %w", err)
}

// MediaRead implements runtime.MediaHost.
func (h *functionHost) MediaRead(ctx context.Context, ref any, maxBytes int64, asBytes bool) (any, error) {
	p, param, pin, err := h.mediaRef(ref)
	if err != nil {
		return nil, err
	}
	store, err := h.mediaStore()
	if err != nil {
		return nil, errors.New("ctx.media.read: no such file")
	}
	rc, f, err := store.Open(ctx, h.op.Actor.ID, p)
	if errors.Is(err, media.ErrNoFile) {
		if pin != nil {
			h.staleMedia = param
		}
		return nil, errors.New("ctx.media.read: no such file")
	}
	if err != nil {
		return nil, fmt.Errorf("ctx.media.read: %w", err)
	}
	defer rc.Close()
	if err := h.mediaSaw(param, pin, f); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(rc, maxBytes))
	if err != nil {
		return nil, fmt.Errorf("ctx.media.read: %w", err)
	}
	out := h.op.MediaPin(raw(ref), f)
	out["truncated"] = int64(len(b)) < f.Size
	if asBytes {
		out["data"] = b // base64 in JSON; the prelude makes it a Uint8Array
	} else {
		out["text"] = strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return out, nil
}

// raw is a reference's URI as given.
func raw(ref any) string {
	s, _ := engine.MediaURI(ref)
	return s
}
