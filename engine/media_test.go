package engine

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
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
	m := newMediaFiles(store, "")
	f, _ := store.describe("u1", "/a.txt")
	at := &ActionType{}
	at.Inputs = []domain.InputField{{Name: "report", Type: domain.PropertyType{Base: domain.TypeMediaReference}}}
	op := &Op{Action: at, Actor: &models.User{ID: "u1"}, Params: map[string]any{"report": m.pin("webdav:/a.txt", f)}, media: m}
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

// TestMediaReferenceForms: which URIs name a file of the tree.
func TestMediaReferenceForms(t *testing.T) {
	base, _ := url.Parse("https://ontoflow.example/app")
	m := mediaFiles{base: base}
	for raw, want := range map[string]string{
		"webdav:/r/q3.pdf":                             "/r/q3.pdf",
		"WEBDAV:/r/q%203.pdf":                          "/r/q 3.pdf",
		"/webdav/r/q3.pdf":                             "/r/q3.pdf",
		"https://ontoflow.example/app/webdav/r/q3.pdf": "/r/q3.pdf",
		"webdav://host/r/q3.pdf":                       "",
		"webdav:/r/q3.pdf?x=1":                         "",
		"webdav:r/q3.pdf":                              "",
		"webdav:/%2e%2e/other/x":                       "/../other/x",
	} {
		if p, ok := m.treePath(raw); !ok || p != want {
			t.Errorf("%s: %q %v, want %q", raw, p, ok, want)
		}
	}
	for _, raw := range []string{"https://elsewhere.example/webdav/r/q3.pdf", "https://ontoflow.example/webdav/r/q3.pdf", "s3://b/k", "/api/x"} {
		if _, ok := m.treePath(raw); ok {
			t.Errorf("%s names a file of the tree", raw)
		}
	}
}
