package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/s3test"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// TestMediaReferencesOnDev runs actions whose media_reference parameters
// name files of the actor's WebDAV tree, over HTTP on a whole dev process,
// on SQLite and Postgres (issue 32): a file PUT over WebDAV is pinned on
// the execution, an edit leaves the record alone, every bad reference is
// the same 400, a function reads the file, a webhook template links it,
// and a change between validation and the operation is 409.
func TestMediaReferencesOnDev(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			more := []string{"--outbound-allow", "127.0.0.1/32", "--public-url", "https://files.example.test/base"}
			if d == "postgres" {
				more = append([]string{"--database-url", testdb.DSN(t, d)}, more...)
			}
			a := devtest.Start(t, adminPassword, more, nil)
			mediaSuite(t, devClient{t: t, base: a.APIURL}, filepath.Join(a.Cfg.DataDir, "files"))
		})
	}
}

// TestMediaReferencesOnS3 is the same suite with the WebDAV tree in
// dav_nodes and the contents in S3 (--webdav-store s3://..., versitygw on
// loopback): the engine pins and reads references through the tree-mode
// store, not the data directory.
func TestMediaReferencesOnS3(t *testing.T) {
	s3 := s3test.Start(t)
	for _, kv := range s3.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			more := []string{"--outbound-allow", "127.0.0.1/32", "--public-url", "https://files.example.test/base",
				"--webdav-store", s3.URL("media-" + d)}
			if d == "postgres" {
				more = append([]string{"--database-url", testdb.DSN(t, d)}, more...)
			}
			a := devtest.Start(t, adminPassword, more, nil)
			mediaSuite(t, devClient{t: t, base: a.APIURL}, "")
			keys, err := s3.Keys(context.Background(), "media-"+d+"/")
			if err != nil || len(keys) == 0 {
				t.Fatalf("the files are not in S3: %v %v", keys, err)
			}
		})
	}
}

// dav sends a WebDAV request as user.
func dav(t *testing.T, base, user, pass, method, p string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(method, base+"/webdav"+p, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, p, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func mediaSuite(t *testing.T, c devClient, filesDir string) {
	const bobPass = "bob-password-1234"
	var me struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	c.must(http.StatusOK, "GET", "/api/v1/me", nil, &me)
	var bob struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "bob", "password": bobPass}, &bob)
	put := func(user, pass, p string, body []byte) {
		t.Helper()
		if st := dav(t, c.base, user, pass, "PUT", p, body); st != http.StatusCreated && st != http.StatusNoContent {
			t.Fatalf("PUT %s: %d", p, st)
		}
	}
	if st := dav(t, c.base, "admin", adminPassword, "MKCOL", "/reports", nil); st != http.StatusCreated {
		t.Fatalf("MKCOL: %d", st)
	}
	q3 := []byte("quarter three: revenue up\n")
	put("admin", adminPassword, "/reports/q3.txt", q3)
	put("bob", bobPass, "/secret.txt", []byte("bob's only"))
	// A symlink out of the admin's tree, into bob's (made on disk: WebDAV
	// cannot make one; the tree of S3 mode, filesDir "", has no links).
	if filesDir != "" {
		if err := os.Symlink(filepath.Join(filesDir, bob.ID, "secret.txt"), filepath.Join(filesDir, me.User.ID, "escape.txt")); err != nil {
			t.Fatal(err)
		}
	}

	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true},
			{"name": "notes", "type": "string"}, {"name": "report", "type": "media_reference"},
			{"name": "attachments", "type": map[string]any{"type": "array", "element_type": "media_reference"}}}}, nil)
	var obj struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": "t1"}}, &obj)
	// actionOf makes an action whose one input, report, is of type typ.
	actionOf := func(name, kind string, typ any, op map[string]any) string {
		var a struct {
			ID string `json:"id"`
		}
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": name, "object_type_id": "Ticket",
			"operation_kind": kind, "inputs": []map[string]any{{"name": "report", "type": typ, "required": true}},
			"config": map[string]any{"operation": op}}, &a)
		return a.ID
	}
	action := func(name, kind string, op map[string]any) string { return actionOf(name, kind, "media_reference", op) }
	// An array of references, named report as the single one so that
	// its refusals can be compared with the single one's.
	arrayType := map[string]any{"type": "array", "element_type": "media_reference"}
	execute := func(id string, ref any) (int, []byte) {
		return c.do("POST", "/api/v1/ontology/actions/"+id+"/execute",
			map[string]any{"target_object_id": obj.ID, "parameters": map[string]any{"report": ref}})
	}
	attach := action("attach", "update_object", map[string]any{"property_mappings": []map[string]any{{"property": "report", "input": "report"}}})

	var pinned map[string]any
	t.Run("a file PUT over WebDAV is pinned on the execution, and an edit does not change the record", func(t *testing.T) {
		for _, ref := range []string{"webdav:/reports/q3.txt", "/webdav/reports/q3.txt", "https://files.example.test/base/webdav/reports/q3.txt"} {
			st, body := execute(attach, ref)
			if st != http.StatusOK {
				t.Fatalf("%s: %d %s", ref, st, body)
			}
			var ex struct {
				ID         string         `json:"id"`
				Parameters map[string]any `json:"parameters"`
			}
			if err := json.Unmarshal(body, &ex); err != nil {
				t.Fatal(err)
			}
			pinned, _ = ex.Parameters["report"].(map[string]any)
			if pinned["sha256"] != sha(q3) || pinned["size"] != float64(len(q3)) || pinned["path"] != "/reports/q3.txt" ||
				pinned["uri"] != ref || pinned["etag"] == "" || pinned["modified"] == "" || pinned["name"] != "q3.txt" ||
				pinned["url"] != "https://files.example.test/base/webdav/reports/q3.txt" {
				t.Fatalf("%s: pinned = %v", ref, pinned)
			}
		}
		var last struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/executions?action_type="+attach, nil, &last)
		if len(last.Data) == 0 {
			t.Fatal("no executions listed")
		}
		put("admin", adminPassword, "/reports/q3.txt", []byte("quarter three: restated\n"))
		var ex struct {
			Parameters map[string]any `json:"parameters"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+last.Data[0].ID, nil, &ex)
		again, _ := ex.Parameters["report"].(map[string]any)
		if again["sha256"] != sha(q3) || again["size"] != float64(len(q3)) || again["etag"] != pinned["etag"] {
			t.Fatalf("the record changed with the file: %v", again)
		}
		put("admin", adminPassword, "/reports/q3.txt", q3)
	})

	bad := []string{
		"webdav:/secret.txt",                              // bob's file, not in the admin's tree
		"webdav:/reports/missing.txt",                     // missing
		"webdav:/reports",                                 // a folder
		"webdav:/reports/../../" + bob.ID + "/secret.txt", // ..
		"webdav:/%2e%2e/" + bob.ID + "/secret.txt",        // percent-encoded ..
		"/webdav/%2E%2E/" + bob.ID + "/secret.txt",
		"webdav:/escape.txt",                   // a symlink out of the tree
		"/webdav/../" + bob.ID + "/secret.txt", // into bob's tree
		"https://files.example.test/base/webdav/..%2f" + bob.ID + "/secret.txt",
	}
	// refusal is a 400 body without what differs by request: the failed
	// execution's identity, times and the value as sent (its record is the
	// body's data), and the action's id and name; details are the
	// error's details alone.
	refusal := func(t *testing.T, body []byte) (whole, details string) {
		t.Helper()
		var m map[string]map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		rec, _ := m["error"]["data"].(map[string]any)
		for _, k := range []string{"id", "workflow_id", "run_id", "created_at", "started_at", "finished_at", "parameters", "action_type_id", "action_type_name"} {
			delete(rec, k)
		}
		b, _ := json.Marshal(m)
		d, _ := json.Marshal(m["error"]["details"])
		return string(b), string(d)
	}
	var single, singleDetails string // a single reference's refusal, for the array's
	t.Run("a bad reference is the same 400 naming the parameter, whatever makes it bad", func(t *testing.T) {
		var first string
		for _, ref := range bad {
			st, body := execute(attach, ref)
			if st != http.StatusBadRequest || !strings.Contains(string(body), `"parameters.report"`) {
				t.Fatalf("%s: %d %s", ref, st, body)
			}
			// Apart from the execution's identity, times and the value as
			// sent, every byte is the same.
			b, d := refusal(t, body)
			if first == "" {
				first, single, singleDetails = b, b, d
			} else if b != first {
				t.Fatalf("%s answers\n%s\nnot\n%s", ref, b, first)
			}
		}
		// Other URLs keep today's behaviour: not resolved, not pinned.
		st, body := execute(attach, "https://elsewhere.example/q3.pdf")
		var plain struct {
			Parameters map[string]any `json:"parameters"`
		}
		_ = json.Unmarshal(body, &plain)
		if st != http.StatusOK || plain.Parameters["report"] != "https://elsewhere.example/q3.pdf" {
			t.Fatalf("another URL: %d %s", st, body)
		}
	})

	t.Run("an object property naming a WebDAV file is checked when written", func(t *testing.T) {
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects",
			map[string]any{"properties": map[string]any{"title": "with file", "report": "webdav:/reports/q3.txt"}}, nil)
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects",
			map[string]any{"properties": map[string]any{"title": "elsewhere", "report": "https://elsewhere.example/x.pdf"}}, nil)
		var first string
		for i, ref := range []string{"webdav:/secret.txt", "webdav:/reports", "webdav:/%2e%2e/" + bob.ID + "/secret.txt", "webdav:/escape.txt"} {
			st, body := c.do("POST", "/api/v1/ontology/types/Ticket/objects",
				map[string]any{"properties": map[string]any{"title": "bad", "report": ref}})
			if st != http.StatusBadRequest || !strings.Contains(string(body), `"properties.report"`) {
				t.Fatalf("%s: %d %s", ref, st, body)
			}
			if i == 0 {
				first = string(body)
			} else if string(body) != first {
				t.Fatalf("%s answers %s, not %s", ref, body, first)
			}
		}
		path := "/api/v1/ontology/types/Ticket/objects/" + obj.ID
		c.must(http.StatusOK, "PATCH", path, map[string]any{"properties": map[string]any{"report": "/webdav/reports/q3.txt"}}, nil)
		c.must(http.StatusBadRequest, "PATCH", path, map[string]any{"properties": map[string]any{"report": "webdav:/secret.txt"}}, nil)
	})

	t.Run("a function reads the file, pinned, and the read is recorded", func(t *testing.T) {
		fn := action("summarize", "invoke_function", inline("javascript", `export default function (ctx) {
  const s = ctx.media.stat(ctx.parameters.report);
  const r = ctx.media.read(ctx.parameters.report, { max_bytes: 7 });
  const b = ctx.media.read("webdav:/reports/q3.txt", { as: "bytes" });
  let big = "";
  try { ctx.media.read(ctx.parameters.report, { max_bytes: 2 << 20 }); } catch (e) { big = String(e); }
  return { edits: [{ type: "update", object_id: ctx.target.id,
    properties: { notes: [s.size, r.text, r.truncated, b.bytes.length, b.bytes[0], big.includes("network")].join("|") } }] };
}`))
		st, body := execute(fn, "webdav:/reports/q3.txt")
		if st != http.StatusOK {
			t.Fatalf("%d %s", st, body)
		}
		want := strings.Join([]string{"26", "quarter", "true", "26", "113", "true"}, "|")
		if got := c.notes(obj.ID); got != want {
			t.Fatalf("notes = %q, want %q", got, want)
		}
		var ex struct {
			Result struct {
				Function struct {
					MediaReads map[string]string `json:"media_reads"`
				} `json:"function"`
			} `json:"operation_result"`
		}
		if err := json.Unmarshal(body, &ex); err != nil {
			t.Fatal(err)
		}
		if ex.Result.Function.MediaReads["/reports/q3.txt"] != sha(q3) {
			t.Fatalf("media reads = %v (%s)", ex.Result.Function.MediaReads, body)
		}
	})

	t.Run("a webhook template links the pinned file; a change before the run step is 409", func(t *testing.T) {
		var mu sync.Mutex
		var got []byte
		change := false
		rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = b
			ch := change
			mu.Unlock()
			if ch {
				// Between the validate step and the run step: the
				// webhook is the effect step, which runs between them.
				put("admin", adminPassword, "/reports/q3.txt", []byte("changed under the execution\n"))
			}
			w.WriteHeader(http.StatusOK)
		}))
		defer rx.Close()
		hook := action("notify-crm", "invoke_webhook", map[string]any{"url": rx.URL + "/hook", "method": "POST",
			"body": `{"url": "{{ parameters.report.url }}", "name": "{{ parameters.report.name }}", "size": {{ parameters.report.size }}, "sha256": "{{ parameters.report.sha256 }}"}`})
		st, body := execute(hook, "webdav:/reports/q3.txt")
		if st != http.StatusOK {
			t.Fatalf("%d %s", st, body)
		}
		mu.Lock()
		sent := string(got)
		mu.Unlock()
		wantBody := `{"url": "https://files.example.test/base/webdav/reports/q3.txt", "name": "q3.txt", "size": 26, "sha256": "` + sha(q3) + `"}`
		if sent != wantBody {
			t.Fatalf("webhook body %s, want %s", sent, wantBody)
		}

		mu.Lock()
		change = true
		mu.Unlock()
		st, body = execute(hook, "webdav:/reports/q3.txt")
		var res struct {
			Error struct {
				Code    string `json:"code"`
				Details []struct {
					Field string `json:"field"`
				} `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &res)
		if st != http.StatusConflict || res.Error.Code != "Conflict" || len(res.Error.Details) == 0 || res.Error.Details[0].Field != "parameters.report" {
			t.Fatalf("changed between the steps: %d %s", st, body)
		}
	})

	// The references inside arrays, with q3.txt as it was (the 409 case
	// above changed it).
	put("admin", adminPassword, "/reports/q3.txt", q3)
	q4 := []byte("quarter four: outlook\n")
	put("admin", adminPassword, "/reports/q4.txt", q4)
	elsewhere := "https://elsewhere.example/x.pdf"
	attachAll := actionOf("attach-all", "update_object", arrayType,
		map[string]any{"property_mappings": []map[string]any{{"property": "attachments", "input": "report"}}})

	t.Run("each reference of an array is pinned as a single one; other URLs are left", func(t *testing.T) {
		st, body := execute(attachAll, []any{"webdav:/reports/q3.txt", "/webdav/reports/q4.txt", elsewhere})
		if st != http.StatusOK {
			t.Fatalf("%d %s", st, body)
		}
		var ex struct {
			ID         string         `json:"id"`
			Parameters map[string]any `json:"parameters"`
		}
		if err := json.Unmarshal(body, &ex); err != nil {
			t.Fatal(err)
		}
		items, _ := ex.Parameters["report"].([]any)
		if len(items) != 3 || items[2] != elsewhere {
			t.Fatalf("parameters = %v", ex.Parameters)
		}
		for i, want := range []struct {
			uri, path string
			body      []byte
		}{{"webdav:/reports/q3.txt", "/reports/q3.txt", q3}, {"/webdav/reports/q4.txt", "/reports/q4.txt", q4}} {
			p, _ := items[i].(map[string]any)
			if p["sha256"] != sha(want.body) || p["size"] != float64(len(want.body)) || p["path"] != want.path || p["uri"] != want.uri ||
				p["etag"] == "" || p["modified"] == "" || p["url"] != "https://files.example.test/base/webdav"+want.path {
				t.Fatalf("element %d: pinned = %v", i, p)
			}
		}
		// The record as read back, and the property the action wrote.
		var rec struct {
			Parameters map[string]any `json:"parameters"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+ex.ID, nil, &rec)
		if a, b := fmt.Sprint(rec.Parameters["report"]), fmt.Sprint(items); a != b {
			t.Fatalf("the record holds %s, the answer %s", a, b)
		}
		if got := fmt.Sprint(c.object(obj.ID)["attachments"]); got != fmt.Sprint(items) {
			t.Fatalf("attachments = %s", got)
		}
		// An edit of an element's file leaves the record alone.
		put("admin", adminPassword, "/reports/q4.txt", []byte("quarter four: restated\n"))
		c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+ex.ID, nil, &rec)
		if a, b := fmt.Sprint(rec.Parameters["report"]), fmt.Sprint(items); a != b {
			t.Fatalf("after an edit the record holds %s, not %s", a, b)
		}
		put("admin", adminPassword, "/reports/q4.txt", q4)
	})

	t.Run("an array with one bad reference is the single reference's 400, whatever makes it bad", func(t *testing.T) {
		if singleDetails == "" {
			t.Skip("the single reference's refusal did not run")
		}
		var first string
		for _, ref := range bad {
			st, body := execute(attachAll, []any{"webdav:/reports/q3.txt", ref})
			if st != http.StatusBadRequest {
				t.Fatalf("%s: %d %s", ref, st, body)
			}
			b, d := refusal(t, body)
			if d != singleDetails || b != single {
				t.Fatalf("%s: details %s, not the single reference's %s\n%s\n%s", ref, d, singleDetails, b, single)
			}
			if first == "" {
				first = b
			} else if b != first {
				t.Fatalf("%s answers\n%s\nnot\n%s", ref, b, first)
			}
		}
	})

	t.Run("an array property with one bad reference is refused when written", func(t *testing.T) {
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{
			"title": "with files", "attachments": []any{"webdav:/reports/q3.txt", "/webdav/reports/q4.txt", elsewhere}}}, nil)
		var first string
		for i, ref := range []string{"webdav:/secret.txt", "webdav:/reports", "webdav:/reports/missing.txt", "webdav:/%2e%2e/" + bob.ID + "/secret.txt", "webdav:/escape.txt"} {
			st, body := c.do("POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{
				"title": "bad files", "attachments": []any{"webdav:/reports/q3.txt", ref}}})
			if st != http.StatusBadRequest || !strings.Contains(string(body), `"properties.attachments[1]"`) || !strings.Contains(string(body), `"media"`) {
				t.Fatalf("%s: %d %s", ref, st, body)
			}
			if i == 0 {
				first = string(body)
			} else if string(body) != first {
				t.Fatalf("%s answers %s, not %s", ref, body, first)
			}
		}
		c.must(http.StatusBadRequest, "PATCH", "/api/v1/ontology/types/Ticket/objects/"+obj.ID,
			map[string]any{"properties": map[string]any{"attachments": []any{"webdav:/secret.txt"}}}, nil)
	})

	t.Run("a function reads a pinned element of an array", func(t *testing.T) {
		fn := actionOf("summarize-all", "invoke_function", arrayType, inline("javascript", `export default function (ctx) {
  const s = ctx.media.stat(ctx.parameters.report[1]);
  const r = ctx.media.read(ctx.parameters.report[0], { max_bytes: 7 });
  return { edits: [{ type: "update", object_id: ctx.target.id, properties: { notes: [s.path, s.size, r.text].join("|") } }] };
}`))
		st, body := execute(fn, []any{"webdav:/reports/q3.txt", "webdav:/reports/q4.txt"})
		if st != http.StatusOK {
			t.Fatalf("%d %s", st, body)
		}
		if got, want := c.notes(obj.ID), "/reports/q4.txt|22|quarter"; got != want {
			t.Fatalf("notes = %q, want %q", got, want)
		}
	})

	t.Run("a function's test run reads the tester's own tree, as it is now", func(t *testing.T) {
		c.must(http.StatusCreated, "POST", "/api/v1/functions", map[string]any{"name": "reader", "runtime": "javascript"}, nil)
		c.must(http.StatusCreated, "POST", "/api/v1/functions/reader/versions", map[string]any{"version": "1.0.0", "source": `export default function (ctx) {
  const s = ctx.media.stat(ctx.parameters.report);
  const r = ctx.media.read("webdav:/reports/q3.txt", { max_bytes: 7 });
  return { size: s.size, sha256: s.sha256, text: r.text, bobs: ctx.media.stat("webdav:/secret.txt"),
    up: ctx.media.stat("webdav:/%2e%2e/` + bob.ID + `/secret.txt") };
}`}, nil)
		var tr struct {
			Status string         `json:"status"`
			Value  map[string]any `json:"value"`
			Error  any            `json:"error"`
		}
		c.must(http.StatusOK, "POST", "/api/v1/functions/reader/versions/1.0.0/test",
			map[string]any{"parameters": map[string]any{"report": "webdav:/reports/q4.txt"}}, &tr)
		v := tr.Value
		if tr.Status != "succeeded" || v["size"] != float64(len(q4)) || v["sha256"] != sha(q4) || v["text"] != "quarter" ||
			v["bobs"] != nil || v["up"] != nil {
			t.Fatalf("test run: %+v", tr)
		}
	})

	t.Run("an element's file changed before the run step is 409 naming the parameter", func(t *testing.T) {
		var mu sync.Mutex
		var got []byte
		rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = b
			mu.Unlock()
			// The effect step, between the validate and run steps,
			// changes the second element's file.
			put("admin", adminPassword, "/reports/q4.txt", []byte("quarter four: changed under the execution\n"))
			w.WriteHeader(http.StatusOK)
		}))
		defer rx.Close()
		hook := actionOf("notify-all", "invoke_webhook", arrayType, map[string]any{"url": rx.URL + "/hook", "method": "POST",
			"body": `{"files": "{{ parameters.report }}"}`})
		st, body := execute(hook, []any{"webdav:/reports/q3.txt", "webdav:/reports/q4.txt"})
		var res struct {
			Error struct {
				Code    string `json:"code"`
				Details []struct {
					Field  string `json:"field"`
					Reason string `json:"reason"`
				} `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &res)
		if st != http.StatusConflict || res.Error.Code != "Conflict" || len(res.Error.Details) == 0 ||
			res.Error.Details[0].Field != "parameters.report" || res.Error.Details[0].Reason != "stale_media" {
			t.Fatalf("changed between the steps: %d %s", st, body)
		}
		// The template rendered the whole array of pins, as JSON text
		// (JSON-escaped, as every value in a webhook body).
		mu.Lock()
		defer mu.Unlock()
		var outer struct {
			Files string `json:"files"`
		}
		var sent []map[string]any
		err := json.Unmarshal(got, &outer)
		if err == nil {
			err = json.Unmarshal([]byte(outer.Files), &sent)
		}
		if err != nil || len(sent) != 2 || sent[1]["sha256"] != sha(q4) ||
			sent[0]["url"] != "https://files.example.test/base/webdav/reports/q3.txt" {
			t.Fatalf("webhook body %s (%v)", got, err)
		}
	})
}
