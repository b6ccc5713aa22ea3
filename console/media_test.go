package console_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
)

// TestConsoleShowsPinnedFile: an execution whose media_reference
// parameter named a WebDAV file shows, on its console page, the pinned
// version (name, size, SHA-256) linked to the file, after the file
// changed; the object's page links its media_reference property to the
// file. Links are plain /webdav/ paths (the reader's own credentials).
func TestConsoleShowsPinnedFile(t *testing.T) {
	s := startStack(t)
	putAt := func(path, body string) {
		req, err := http.NewRequest("PUT", s.base+"/webdav/"+path, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("admin", adminPassword)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
			t.Fatalf("PUT: %d", resp.StatusCode)
		}
	}
	put := func(body string) { putAt("q3%20report.txt", body) }
	content := "revenue up"
	put(content)
	putAt("q4.txt", "q4 figures")
	s.create("/api/v1/ontology/types", map[string]any{"name": "Doc", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "report", "type": "media_reference"},
			{"name": "reports", "type": map[string]any{"type": "array", "element_type": "media_reference"}}}})
	obj := s.create("/api/v1/ontology/types/Doc/objects", map[string]any{"properties": map[string]any{"title": "d1"}})
	s.create("/api/v1/ontology/actions", map[string]any{"name": "attach", "object_type_id": "Doc", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "report", "type": "media_reference", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "report", "input": "report"}}}}})
	var ex struct {
		ID string `json:"id"`
	}
	s.must(http.StatusOK, "POST", "/api/v1/ontology/actions/attach/execute", map[string]any{"target_object_id": obj,
		"parameters": map[string]any{"report": "webdav:/q3%20report.txt"}}, &ex)
	arrayType := map[string]any{"type": "array", "element_type": "media_reference"}
	s.create("/api/v1/ontology/actions", map[string]any{"name": "attach-all", "object_type_id": "Doc", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "reports", "type": arrayType, "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "reports", "input": "reports"}}}}})
	var exAll struct {
		ID string `json:"id"`
	}
	s.must(http.StatusOK, "POST", "/api/v1/ontology/actions/attach-all/execute", map[string]any{"target_object_id": obj,
		"parameters": map[string]any{"reports": []any{"webdav:/q3%20report.txt", "webdav:/q4.txt"}}}, &exAll)
	put("restated, longer than before")

	sum := sha256.Sum256([]byte(content))
	admin := signIn(t, s.base+"/ui", "admin", adminPassword)
	_, page := send(t, "GET", s.base+"/ui/executions/"+ex.ID, nil, admin)
	for _, want := range []string{`<a class="pinned-file" href="/webdav/q3%20report.txt">q3 report.txt</a>`,
		"10 bytes", hex.EncodeToString(sum[:])} {
		if !strings.Contains(page, want) {
			t.Errorf("execution page lacks %q:\n%s", want, page)
		}
	}
	// An array of references: each element pinned, each listed as a file.
	_, page = send(t, "GET", s.base+"/ui/executions/"+exAll.ID, nil, admin)
	for _, want := range []string{`<ul class="pinned-files"><li><a class="pinned-file" href="/webdav/q3%20report.txt">q3 report.txt</a>`,
		`<li><a class="pinned-file" href="/webdav/q4.txt">q4.txt</a>`, "10 bytes", hex.EncodeToString(sum[:])} {
		if !strings.Contains(page, want) {
			t.Errorf("the array's execution page lacks %q:\n%s", want, page)
		}
	}
	_, page = send(t, "GET", s.base+"/ui/objects/Doc/"+obj, nil, admin)
	for _, want := range []string{`<li><a href="/webdav/q3%20report.txt">`, `<li><a href="/webdav/q4.txt">`} {
		if !strings.Contains(page, want) {
			t.Errorf("object page does not link the array's file %q:\n%s", want, page)
		}
	}
	if !strings.Contains(page, `<a class="value" href="/webdav/q3%20report.txt">`) {
		t.Errorf("object page does not link the file:\n%s", page)
	}
	if strings.Contains(page, "token=") {
		t.Errorf("a link carries a token:\n%s", page)
	}
}
