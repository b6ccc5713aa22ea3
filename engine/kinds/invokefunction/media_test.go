package invokefunction

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/models"
)

// fakeMedia is a store of one user's files whose content the test
// changes.
type fakeMedia struct{ files map[string]string }

func (f *fakeMedia) describe(userID, p string) (media.File, error) {
	c, ok := f.files[userID+p]
	if !ok {
		return media.File{}, media.ErrNoFile
	}
	return media.File{Path: p, Size: int64(len(c)), ModTime: time.Unix(1, 0), ETag: `"` + c + `"`, SHA256: "sum-" + c}, nil
}

func (f *fakeMedia) Stat(_ context.Context, userID, p string) (media.File, error) {
	return f.describe(userID, p)
}

func (f *fakeMedia) Open(_ context.Context, userID, p string) (io.ReadCloser, media.File, error) {
	d, err := f.describe(userID, p)
	if err != nil {
		return nil, d, err
	}
	return io.NopCloser(strings.NewReader(f.files[userID+p])), d, nil
}

// TestFunctionMediaReadsThePinnedVersion: ctx.media.read of a pinned
// parameter answers its bytes; once the file holds other bytes, the read
// throws and the run's conflict names the parameter (409), whatever the
// function does with the throw.
func TestFunctionMediaReadsThePinnedVersion(t *testing.T) {
	store := &fakeMedia{files: map[string]string{"u1/a.txt": "first"}}
	f, _ := store.describe("u1", "/a.txt")
	at := &engine.ActionType{}
	at.Inputs = []domain.InputField{{Name: "report", Type: domain.PropertyType{Base: domain.TypeMediaReference}}}
	op := (&engine.Op{Action: at, Actor: &models.User{ID: "u1"}}).WithMedia(store, "")
	op.Params = map[string]any{"report": op.MediaPin("webdav:/a.txt", f)}
	h := &functionHost{op: op, seen: map[string]string{}}
	ctx := context.Background()
	got, err := h.MediaRead(ctx, op.Params["report"], 3, false)
	if err != nil || got.(map[string]any)["text"] != "fir" || got.(map[string]any)["truncated"] != true {
		t.Fatalf("read = %v, %v", got, err)
	}
	if h.media["/a.txt"] != "sum-first" || h.mediaConflict() != nil {
		t.Fatalf("recorded %v, conflict %v", h.media, h.mediaConflict())
	}
	if got, err := h.MediaStat(ctx, "webdav:/missing.txt"); got != nil || err != nil {
		t.Fatalf("an unpinned missing file: %v, %v", got, err)
	}
	store.files["u1/a.txt"] = "second"
	if _, err := h.MediaRead(ctx, "webdav:/a.txt", 100, true); err == nil {
		t.Fatal("a read of other bytes than pinned succeeded")
	}
	c := h.mediaConflict()
	if ae, ok := apperr.As(c); !ok || ae.Code != apperr.Conflict || ae.Details[0].Field != "parameters.report" {
		t.Fatalf("conflict = %v", c)
	}
}
