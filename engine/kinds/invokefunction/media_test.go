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
	"github.com/ontoflow/ontoflow/functions"
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

// TestFunctionMediaReadsAPinnedElement: an element of an array of
// references is pinned as a single reference is, and a read finding other
// bytes names the array parameter.
func TestFunctionMediaReadsAPinnedElement(t *testing.T) {
	store := &fakeMedia{files: map[string]string{"u1/a.txt": "first", "u1/b.txt": "other"}}
	a, _ := store.describe("u1", "/a.txt")
	b, _ := store.describe("u1", "/b.txt")
	at := &engine.ActionType{}
	at.Inputs = []domain.InputField{{Name: "files", Type: domain.ArrayOf(domain.T(domain.TypeMediaReference))}}
	op := (&engine.Op{Action: at, Actor: &models.User{ID: "u1"}}).WithMedia(store, "")
	op.Params = map[string]any{"files": []any{"https://elsewhere.example/x", op.MediaPin("webdav:/a.txt", a), op.MediaPin("webdav:/b.txt", b)}}
	if name, pin := op.PinnedParam("/b.txt"); name != "files" || pin["sha256"] != "sum-other" {
		t.Fatalf("pinned param of /b.txt = %q %v", name, pin)
	}
	h := &functionHost{op: op, seen: map[string]string{}}
	ctx := context.Background()
	if got, err := h.MediaStat(ctx, "webdav:/a.txt"); err != nil || got.(map[string]any)["sha256"] != "sum-first" {
		t.Fatalf("stat = %v, %v", got, err)
	}
	store.files["u1/b.txt"] = "changed"
	if _, err := h.MediaRead(ctx, op.Params["files"].([]any)[2], 100, false); err == nil {
		t.Fatal("a read of other bytes than the element's pin succeeded")
	}
	c := h.mediaConflict()
	if ae, ok := apperr.As(c); !ok || ae.Code != apperr.Conflict || ae.Details[0].Field != "parameters.files" {
		t.Fatalf("conflict = %v", c)
	}
}

// TestFunctionMediaInATestRun: a test run has no action (TestHost): ctx.media
// reads the tester's tree without pins, and without a store answers no
// file (it dereferenced the missing action).
func TestFunctionMediaInATestRun(t *testing.T) {
	store := &fakeMedia{files: map[string]string{"u1/a.txt": "first"}}
	ctx := context.Background()
	reads := &functions.Reads{}
	h := TestHostOver(store, "")(&models.User{ID: "u1"}, reads).(*functionHost)
	got, err := h.MediaRead(ctx, map[string]any{"uri": "webdav:/a.txt", "sha256": "not this"}, 100, false)
	if err != nil || got.(map[string]any)["text"] != "first" || h.mediaConflict() != nil {
		t.Fatalf("read = %v, %v (conflict %v)", got, err, h.mediaConflict())
	}
	bare := TestHost(&models.User{ID: "u1"}, reads).(*functionHost)
	if got, err := bare.MediaStat(ctx, "webdav:/a.txt"); got != nil || err != nil {
		t.Fatalf("stat without a store = %v, %v", got, err)
	}
	if _, err := bare.MediaRead(ctx, "webdav:/a.txt", 100, false); err == nil {
		t.Fatal("a read without a store succeeded")
	}
}
