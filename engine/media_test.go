package engine

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/models"
)

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

// oneFile is a media store holding one file of user u1.
type oneFile struct{ f media.File }

func (s oneFile) Stat(_ context.Context, userID, p string) (media.File, error) {
	if userID != "u1" || p != s.f.Path {
		return media.File{}, media.ErrNoFile
	}
	return s.f, nil
}

func (s oneFile) Open(context.Context, string, string) (io.ReadCloser, media.File, error) {
	return nil, media.File{}, media.ErrNoFile
}

// TestMediaArrayPins: the elements of an array of references are pinned
// one by one, other URLs left; on the execute path (keepPins) an element
// already pinned is kept as recorded, and checkPins finds every pinned
// element, naming the parameter.
func TestMediaArrayPins(t *testing.T) {
	f := media.File{Path: "/a.txt", Size: 5, ModTime: time.Unix(1, 0), ETag: `"e1"`, SHA256: "s1"}
	e := &Engine{media: newMediaFiles(oneFile{f}, ""), log: slog.New(slog.DiscardHandler)}
	at := &ActionType{}
	at.Inputs = []domain.InputField{{Name: "files", Type: domain.ArrayOf(domain.T(domain.TypeMediaReference))}}
	in := &input{Request: Request{Action: at, Actor: &models.User{ID: "u1"}}}
	params := map[string]any{"files": []any{"webdav:/a.txt", "https://elsewhere.example/x"}}
	v := &Validation{Result: Valid, Parameters: []ParameterResult{{Name: "files", Result: Valid}}}
	e.resolveMedia(context.Background(), in, params, v)
	got := params["files"].([]any)
	if pin, _ := got[0].(map[string]any); v.Result != Valid || pin["sha256"] != "s1" || got[1] != "https://elsewhere.example/x" || !hasPins(at, params) {
		t.Fatalf("resolved %v (%v)", got, v.Result)
	}

	// The execute path: the recorded pin is kept even though the file
	// changed since; checkPins then refuses it.
	e.media.store = oneFile{media.File{Path: "/a.txt", Size: 6, ETag: `"e2"`, SHA256: "s2"}}
	in.keepPins = true
	again := map[string]any{"files": []any{got[0], got[1]}}
	e.resolveMedia(context.Background(), in, again, v)
	if pin := again["files"].([]any)[0].(map[string]any); v.Result != Valid || pin["sha256"] != "s1" {
		t.Fatalf("kept %v (%v)", again, v.Result)
	}
	in.Params = again
	err := e.checkPins(context.Background(), in)
	if ae, ok := apperr.As(err); !ok || ae.Code != apperr.Conflict || ae.Details[0].Field != "parameters.files" || ae.Details[0].Reason != "stale_media" {
		t.Fatalf("checkPins = %v", err)
	}

	// Arrays of arrays too.
	nested := domain.ArrayOf(domain.ArrayOf(domain.T(domain.TypeMediaReference)))
	in.keepPins = false
	inner, dav, err := e.pinValue(context.Background(), in, nested, []any{[]any{"webdav:/a.txt"}})
	if pin, _ := inner.([]any)[0].([]any)[0].(map[string]any); err != nil || !dav || pin["sha256"] != "s2" {
		t.Fatalf("nested: %v %v %v", inner, dav, err)
	}

	// An element naming no file: the parameter is invalid with the one
	// message of a single reference.
	params = map[string]any{"files": []any{"webdav:/a.txt", "webdav:/missing.txt"}}
	v = &Validation{Result: Valid, Parameters: []ParameterResult{{Name: "files", Result: Valid}}}
	in.keepPins = false
	e.resolveMedia(context.Background(), in, params, v)
	c := v.Parameters[0].Constraints
	if v.Result != Invalid || len(c) != 1 || c[0].Message != mediaRefused("files") {
		t.Fatalf("a missing element: %v %+v", v.Result, c)
	}
}
