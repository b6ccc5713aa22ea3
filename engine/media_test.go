package engine

import (
	"net/url"
	"testing"
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
