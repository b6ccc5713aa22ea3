package console_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/ontoflow/ontoflow/internal/harness/devtest"
)

// Issue 41, item 5: the probes of the read rule, the secret use policy
// and the function sandbox, re-run as a user without rights against every
// route added since round 2 — the explorer, the file picker, Insights, the
// live form and the media references — on one dev stack. Each probe also
// shows that a user with the rights does see the data, so none passes by
// seeing nothing at all.

// Markers of the hidden object and the other user's file: none may reach
// the viewer. The values are unlikely to appear in a page by chance.
const (
	hidTitle    = "hid-title-4c1e"
	hidNotes    = "hid-notes-9b7a"
	hidPriority = "hid-prio-e2f0"
	secretValue = "probe-secret-value-5d3a90"
	bobFileName = "bob-private-7e21.txt"
	bobBytes    = "bob-bytes-0f6c2d"
)

const (
	viewerPW  = "viewer-password-1"
	clearedPW = "cleared-password-1"
	authorPW  = "author-password-1"
	bobPW     = "bob-password-1"
	auditorPW = "auditor-password-1"
)

// probe is the shared world of the probes.
type probe struct {
	s        *stack
	w        world
	hidden   string // a confidential Ticket: title, notes and priority are markers
	bobID    string
	hook     string // a webhook action whose URL and header use secretValue
	hookSeen func() []string
	viewer   map[string]string // console cookies
	cleared  map[string]string
}

// newProbe starts the stack (outbound calls allowed to loopback only, for
// the webhook receiver) and sets up the hidden object, its link from a
// readable one, another user's file and a secret the viewer may not use.
func newProbe(t *testing.T) *probe {
	a := devtest.Start(t, adminPassword, []string{"--temporal-ui-url", "http://127.0.0.1:1/temporal",
		"--outbound-allow", "127.0.0.1/32"}, nil)
	p := &probe{s: &stack{t: t, base: a.APIURL, app: a}}
	p.w = p.s.seed()
	p.users()
	p.hidden = p.s.create("/api/v1/ontology/types/Ticket/objects", map[string]any{"marking": "confidential",
		"properties": map[string]any{"title": hidTitle, "notes": hidNotes, "priority": hidPriority}})
	p.s.must(http.StatusCreated, "POST", "/api/v1/ontology/link-types", map[string]any{"name": "duplicates",
		"source_object_type_id": "Ticket", "target_object_type_id": "Ticket", "cardinality": "many_to_many"}, nil)
	p.link(p.w.plain, p.hidden)
	p.s.davPut("bob", bobPW, "/private", nil)
	p.s.davPut("bob", bobPW, "/private/"+bobFileName, []byte(bobBytes))
	p.secretHook(t)
	p.viewer = signIn(t, p.s.base+"/ui", "viewer", viewerPW)
	p.cleared = signIn(t, p.s.base+"/ui", "cleared", clearedPW)
	return p
}

// users: viewer (public clearance, no permissions), cleared (may read
// confidential objects and audit executions: the control), author (may
// define actions, not use the secret), bob (owns a file), auditor (reads
// everyone's executions, public clearance).
func (p *probe) users() {
	for _, u := range []map[string]any{
		{"username": "viewer", "password": viewerPW, "clearance": "public"},
		{"username": "cleared", "password": clearedPW, "clearance": "confidential", "permissions": []string{"executions:read"}},
		{"username": "author", "password": authorPW, "clearance": "public", "permissions": []string{"ontology:write"}},
		{"username": "bob", "password": bobPW, "clearance": "public"},
		{"username": "auditor", "password": auditorPW, "clearance": "public", "permissions": []string{"executions:read"}},
	} {
		id := p.s.create("/api/v1/users", u)
		if u["username"] == "bob" {
			p.bobID = id
		}
	}
}

func (p *probe) link(src, dst string) {
	p.s.must(http.StatusCreated, "POST", "/api/v1/ontology/link-types/duplicates/links",
		map[string]any{"source_object_id": src, "target_object_id": dst}, nil)
}

// secretHook defines a secret only the admin may use, sent to a loopback
// receiver, and a webhook action that puts it in its URL and a header.
func (p *probe) secretHook(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(rx.Close)
	p.hookSeen = func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
	p.s.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": "PROBE_S", "value": secretValue,
		"destinations": []string{rx.URL + "/hook/"}}, nil)
	p.hook = p.s.create("/api/v1/ontology/actions", map[string]any{"name": "hook", "object_type_id": "Ticket",
		"operation_kind": "invoke_webhook", "config": map[string]any{"operation": map[string]any{
			"url": rx.URL + "/hook/{{ secrets.PROBE_S }}", "max_attempts": 1,
			"headers": map[string]string{"Authorization": "Bearer {{ secrets.PROBE_S }}"}}}})
}

// hiddenMarkers are what the viewer must never see of the hidden object.
func (p *probe) hiddenMarkers() []string { return []string{p.hidden, hidTitle, hidNotes, hidPriority} }

// leaks lists the markers found in body, leaving out those the prober
// typed into the request (a page may echo its own query back).
func leaks(body, typed string, markers []string) []string {
	var out []string
	for _, m := range markers {
		if !strings.Contains(typed, m) && strings.Contains(body, m) {
			out = append(out, m)
		}
	}
	return out
}

// tbody is the rows of the page's last table: where results are listed
// (the filter row and links around it echo the query).
func tbody(page string) string {
	i, j := strings.LastIndex(page, "<tbody>"), strings.LastIndex(page, "</tbody>")
	if i < 0 || j < i {
		return ""
	}
	return page[i:j]
}

var objectRowRE = regexp.MustCompile(`href="/ui/objects/Ticket/([0-9a-f-]{36})"`)

// rowIDs are the object ids a table's rows link to.
func rowIDs(rows string) []string {
	var ids []string
	for _, m := range objectRowRE.FindAllStringSubmatch(rows, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func (p *probe) get(t *testing.T, path string, who map[string]string) (int, string) {
	t.Helper()
	resp, body := send(t, "GET", p.s.base+path, nil, who)
	return resp.StatusCode, body
}

func TestReadRuleProbe(t *testing.T) {
	p := newProbe(t)
	t.Run("explorer", p.probeExplorer)
	t.Run("pickers and object page", p.probePickers)
	t.Run("form and preview", p.probeForm)
	t.Run("media references and the file picker", p.probeMedia)
	t.Run("functions", p.probeFunctions)
	t.Run("secrets", p.probeSecrets)
	t.Run("insights", p.probeInsights)
	t.Run("delete of a linked object", p.probeDeleteLinks)
	t.Run("failed execute on a hidden target", p.probeFailedTarget)
}

// probeExplorer: counts, search by title, id and property value, filters
// on the hidden values, sorting by them, a reference filter.
func (p *probe) probeExplorer(t *testing.T) {
	var listed struct {
		Data []any `json:"data"`
	}
	st, out := p.s.doAs("viewer", viewerPW, "GET", "/api/v1/ontology/types/Ticket/objects?page_size=100", nil)
	if st != http.StatusOK || json.Unmarshal(out, &listed) != nil {
		t.Fatalf("viewer's listing: %d %s", st, out)
	}
	_, vPage := p.get(t, "/ui/explore", p.viewer)
	_, cPage := p.get(t, "/ui/explore", p.cleared)
	// w.secret and p.hidden are the two confidential tickets.
	vCount, cCount := ticketCount(t, vPage), ticketCount(t, cPage)
	if vCount != len(listed.Data) || cCount != vCount+2 {
		t.Errorf("Ticket counts: viewer %d (lists %d), cleared %d, want viewer+2", vCount, len(listed.Data), cCount)
	}
	probes := []string{
		"", "?q=" + hidTitle, "?q=" + p.hidden, "?q=hid-notes", "?q=" + hidPriority,
		"?cols=title,notes,priority&f.notes=is&v.notes=" + hidNotes,
		"?cols=title,notes&f.notes=includes&v.notes=hid-",
		"?cols=title,notes&f.notes=exists",
		"?cols=title,priority&f.priority=greater_than&v.priority=hid",
		"?cols=title,notes&sort=notes", "?cols=title,notes&sort=-notes", "?cols=title,priority&sort=-priority",
		"?cols=title,duplicate_of&f.duplicate_of=is&v.duplicate_of=" + p.hidden,
		"?cols=title&f.title=is&v.title=" + hidTitle,
	}
	for _, q := range probes {
		st, page := p.get(t, "/ui/explore/Ticket"+q, p.viewer)
		rows := tbody(page)
		if st != http.StatusOK {
			t.Errorf("viewer %s: %d", q, st)
		}
		if l := append(leaks(page, q, p.hiddenMarkers()), leaks(rows, "", p.hiddenMarkers())...); len(l) > 0 {
			t.Errorf("viewer's explorer %s shows %v", q, l)
		}
		for _, id := range rowIDs(rows) {
			if id == p.hidden || id == p.w.secret {
				t.Errorf("viewer's explorer %s lists a confidential object", q)
			}
		}
	}
	// The control: the same filter finds the hidden object for cleared.
	for _, q := range []string{"?q=" + hidTitle, "?cols=title,notes&f.notes=is&v.notes=" + hidNotes} {
		if _, page := p.get(t, "/ui/explore/Ticket"+q, p.cleared); !strings.Contains(tbody(page), p.hidden) {
			t.Errorf("cleared's explorer %s does not list the confidential object", q)
		}
	}
}

var ticketCountRE = regexp.MustCompile(`<a href="/ui/explore/[^"]+">Ticket</a></td><td>(\d+)`)

func ticketCount(t *testing.T, page string) int {
	t.Helper()
	m := ticketCountRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no Ticket row on the explorer:\n%s", page)
	}
	var n int
	fmt.Sscan(m[1], &n)
	return n
}

// probePickers: the reference picker and the target picker searched by
// title, id and property value; the object page of the hidden object and
// of a readable one linked to it.
func (p *probe) probePickers(t *testing.T) {
	for _, q := range []string{hidTitle, p.hidden, hidNotes, "hid-", hidPriority} {
		for _, path := range []string{"/ui/objects/search?type=Ticket&name=p.dup&q=", "/ui/actions/" + p.w.triage + "/targets?q="} {
			_, vBody := p.get(t, path+url.QueryEscape(q), p.viewer)
			if l := leaks(vBody, path+q, p.hiddenMarkers()); len(l) > 0 || strings.Contains(vBody, `value="`+p.hidden+`"`) {
				t.Errorf("viewer's picker %s%s shows %v", path, q, l)
			}
		}
	}
	if _, body := p.get(t, "/ui/objects/search?type=Ticket&name=p.dup&q="+hidTitle, p.cleared); !strings.Contains(body, p.hidden) {
		t.Errorf("cleared's reference picker does not offer the confidential object: %s", body)
	}
	missingID := uuid.NewString()
	st, body := p.get(t, "/ui/objects/Ticket/"+p.hidden, p.viewer)
	stMissing, missing := p.get(t, "/ui/objects/Ticket/"+missingID, p.viewer)
	if st != http.StatusNotFound || st != stMissing {
		t.Errorf("viewer's page of the confidential object: %d (a missing one %d)", st, stMissing)
	}
	sameAsMissing(t, "the confidential object's page", body, missing, p.hidden, missingID)
	for _, q := range []string{"", "?links_page=0", "?links_page=1"} {
		_, body = p.get(t, "/ui/objects/Ticket/"+p.w.plain+q, p.viewer)
		if l := leaks(body, "", p.hiddenMarkers()); len(l) > 0 || !strings.Contains(body, "plain-1") {
			t.Errorf("viewer's page of a readable object linked to the confidential one%s shows %v", q, l)
		}
	}
	if _, body = p.get(t, "/ui/objects/Ticket/"+p.w.plain, p.cleared); !strings.Contains(body, hidTitle) {
		t.Errorf("cleared's page of plain-1 does not name its link to the confidential object")
	}
}

var csrfValueRE = regexp.MustCompile(`[0-9a-f]{64}`)

// sameAsMissing fails unless the answer about the hidden id equals the
// answer about an id that names nothing, once each id is replaced: the
// viewer cannot tell the two apart.
// executionIDRE finds the ids of executions in a run's answer (its
// links, element ids and workflow id).
var executionIDRE = regexp.MustCompile(`(executions/|execution-|undo-|undo-why-|%2F)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func sameAsMissing(t *testing.T, what string, hidden, missing string, hid, miss string) {
	t.Helper()
	if missing == "" {
		t.Errorf("%s: an empty answer proves nothing", what)
	}
	// A run is recorded whether it is refused or not (docs/console.md,
	// "What becomes an execution"): each answer names its own new
	// execution, which says nothing about the object asked about.
	norm := func(s, id string) string {
		s = executionIDRE.ReplaceAllString(s, "${1}EXECUTION")
		return csrfValueRE.ReplaceAllString(strings.ReplaceAll(s, id, "ID"), "CSRF")
	}
	if norm(hidden, hid) != norm(missing, miss) {
		t.Errorf("%s: the confidential id answers otherwise than a missing one:\n%s\n---\n%s", what, hidden, missing)
	}
	if l := leaks(hidden, "", []string{hidTitle, hidNotes, hidPriority}); len(l) > 0 {
		t.Errorf("%s shows %v", what, l)
	}
}

// probeForm: the action page, the live form (target and reference
// parameter), the preview and the API's form model, each asked about the
// hidden id and about an id that names nothing.
func (p *probe) probeForm(t *testing.T) {
	missing := uuid.NewString()
	_, page := p.get(t, "/ui/actions/"+p.w.triage, p.viewer)
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the action page")
	}
	hdr := with(p.viewer, "X-CSRF-Token", m[1])
	post := func(path string, form url.Values) string {
		_, body := send(t, "POST", p.s.base+path, form, hdr)
		return body
	}
	for _, action := range []string{p.w.triage, p.w.markDuplicate} {
		_, h := p.get(t, "/ui/actions/"+action+"?target="+p.hidden, p.viewer)
		_, x := p.get(t, "/ui/actions/"+action+"?target="+missing, p.viewer)
		sameAsMissing(t, "action page "+action, h, x, p.hidden, missing)
		for _, route := range []string{"/form", "/preview", "/run"} {
			f := func(id string) url.Values {
				return url.Values{"target_object_id": {id}, "p.status": {"x"}, "p.dup": {p.w.plain}}
			}
			sameAsMissing(t, "POST "+route+" of "+action, post("/ui/actions/"+action+route, f(p.hidden)),
				post("/ui/actions/"+action+route, f(missing)), p.hidden, missing)
		}
	}
	// A reference parameter naming the hidden object, on a readable target.
	for _, route := range []string{"/form", "/preview", "/run"} {
		f := func(id string) url.Values { return url.Values{"target_object_id": {p.w.plain}, "p.dup": {id}} }
		sameAsMissing(t, "reference parameter, POST "+route, post("/ui/actions/"+p.w.markDuplicate+route, f(p.hidden)),
			post("/ui/actions/"+p.w.markDuplicate+route, f(missing)), p.hidden, missing)
	}
	// The API's form model, as the live form's source.
	api := func(target, dup string) string {
		_, out := p.s.doAs("viewer", viewerPW, "POST", "/api/v1/ontology/actions/"+p.w.markDuplicate+"/form",
			map[string]any{"target_object_id": target, "parameters": map[string]any{"dup": dup}})
		return string(out)
	}
	sameAsMissing(t, "API form, hidden target", api(p.hidden, p.w.plain), api(missing, p.w.plain), p.hidden, missing)
	sameAsMissing(t, "API form, hidden reference", api(p.w.plain, p.hidden), api(p.w.plain, missing), p.hidden, missing)
	// The control: cleared's preview of triage on the hidden object names it.
	_, cpage := p.get(t, "/ui/actions/"+p.w.triage+"?target="+p.hidden, p.cleared)
	cm := csrfRE.FindStringSubmatch(cpage)
	if cm == nil || !strings.Contains(cpage, hidTitle) {
		t.Fatalf("cleared's action page on the confidential object does not name it")
	}
	_, body := send(t, "POST", p.s.base+"/ui/actions/"+p.w.triage+"/preview",
		url.Values{"target_object_id": {p.hidden}, "p.status": {"x"}}, with(p.cleared, "X-CSRF-Token", cm[1]))
	if !strings.Contains(body, hidTitle) {
		t.Errorf("cleared's preview on the confidential object does not name it: %s", body)
	}
}

// bobRef are references that try to reach bob's file from another tree.
func (p *probe) bobRefs() []string {
	rel := p.bobID + "/private/" + bobFileName
	return []string{"webdav:/../" + rel, "/webdav/../" + rel, "webdav:/%2e%2e/" + rel, "webdav:/..%2f" + rel,
		"webdav:/" + rel, "webdav:/private/" + bobFileName, "webdav://" + p.bobID + "/private/" + bobFileName}
}

// probeMedia: another user's file through the picker (folders, search,
// recent files, the raw preview), the live form's preview of a typed
// reference, a direct WebDAV GET, and an execution pinning a reference.
func (p *probe) probeMedia(t *testing.T) {
	fileMarkers := []string{bobFileName, bobBytes, sha256Hex(bobBytes)}
	for _, q := range []string{"dir=/../" + p.bobID, "dir=/../" + p.bobID + "/private", "dir=../../files/" + p.bobID + "/private",
		"dir=%2e%2e/" + p.bobID + "/private", "q=bob-private", "q=bob&dir=/..", "recent=1", "dir=/"} {
		_, body := p.get(t, "/ui/files?field=p-report&"+q, p.viewer)
		if l := leaks(body, q, fileMarkers); len(l) > 0 {
			t.Errorf("viewer's file picker ?%s shows %v", q, l)
		}
	}
	if _, body := p.get(t, "/ui/files?field=p-report&q=bob-private", signIn(t, p.s.base+"/ui", "bob", bobPW)); !strings.Contains(body, bobFileName) {
		t.Errorf("bob's own search does not find his file: %s", body)
	}
	for _, ref := range p.bobRefs() {
		path := "/ui/files/raw?path=" + url.QueryEscape(strings.TrimPrefix(strings.TrimPrefix(ref, "webdav:"), "/webdav"))
		if st, body := p.get(t, path, p.viewer); st == http.StatusOK || strings.Contains(body, bobBytes) {
			t.Errorf("viewer's raw preview %s: %d %q", path, st, body)
		}
	}
	if st, _ := p.davGet("viewer", viewerPW, "/webdav/../"+p.bobID+"/private/"+bobFileName); st == http.StatusOK {
		t.Errorf("viewer's WebDAV GET of bob's file through ..: %d", st)
	}
	p.probePins(t, fileMarkers)
}

func (p *probe) davGet(user, pw, path string) (int, string) {
	req, err := http.NewRequest("GET", p.s.base+path, nil)
	if err != nil {
		p.s.t.Fatal(err)
	}
	req.SetBasicAuth(user, pw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// probePins: each reference to bob's file, executed by the viewer, is
// answered as a reference to a file that does not exist, with nothing of
// the file; bob's own execution pins it (the control).
func (p *probe) probePins(t *testing.T, fileMarkers []string) {
	p.s.create("/api/v1/ontology/types", map[string]any{"name": "Doc", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "report", "type": "media_reference"}}})
	doc := p.s.create("/api/v1/ontology/types/Doc/objects", map[string]any{"properties": map[string]any{"title": "doc-1"}})
	attach := p.s.create("/api/v1/ontology/actions", map[string]any{"name": "attach", "object_type_id": "Doc", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "report", "type": "media_reference", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "report", "input": "report"}}}}})
	exec := func(user, pw, ref string) (int, string) {
		st, out := p.s.doAs(user, pw, "POST", "/api/v1/ontology/actions/"+attach+"/execute",
			map[string]any{"target_object_id": doc, "parameters": map[string]any{"report": ref}})
		return st, string(out)
	}
	nowhere := "webdav:/nowhere-" + uuid.NewString() + ".txt"
	stNone, none := exec("viewer", viewerPW, nowhere)
	for _, ref := range p.bobRefs() {
		st, out := exec("viewer", viewerPW, ref)
		if l := leaks(out, ref, fileMarkers); len(l) > 0 || st != stNone || st == http.StatusOK {
			t.Errorf("viewer's execute with %s: %d (a missing file: %d %s) shows %v: %s", ref, st, stNone, none, l, out)
		}
	}
	if st, out := exec("bob", bobPW, "webdav:/private/"+bobFileName); st != http.StatusOK || !strings.Contains(out, sha256Hex(bobBytes)) {
		t.Errorf("bob's execute with his own file: %d %s", st, out)
	}
	// The live form previews a typed reference through the viewer's own
	// tree: the preview link it offers serves nothing of bob's.
	_, page := p.get(t, "/ui/actions/"+attach+"?target="+doc, p.viewer)
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on attach's page")
	}
	_, frag := send(t, "POST", p.s.base+"/ui/actions/"+attach+"/form", url.Values{"target_object_id": {doc},
		"p.report": {p.bobRefs()[0]}}, with(p.viewer, "X-CSRF-Token", m[1]))
	href := regexp.MustCompile(`/ui/files/raw\?path=[^"]+`).FindString(frag)
	if href == "" {
		t.Fatalf("the form offers no preview of a typed reference: %s", frag)
	}
	if st, body := p.get(t, strings.ReplaceAll(href, "&amp;", "&"), p.viewer); st == http.StatusOK || strings.Contains(body, bobBytes) {
		t.Errorf("the form's preview %s: %d", href, st)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// probeSource is a function that tries every way ctx offers to read the
// hidden object, bob's file and a secret, and returns what it got.
const probeSource = `export default function (ctx) {
  const safe = (f) => { try { return f(); } catch (e) { return "error: " + e; } };
  return { result: {
    get: safe(() => ctx.ontology.get(ctx.parameters.q)),
    byNotes: safe(() => ctx.ontology.query("Ticket", { notes: "` + hidNotes + `" }, 10)),
    byPrefix: safe(() => ctx.ontology.query("Ticket", { "notes.includes": "hid-" }, 10)),
    ordered: safe(() => ctx.ontology.query("Ticket", {}, { limit: 100, order_by: "-notes" }).map((o) => o.properties.title)),
    links: safe(() => ctx.ontology.links(ctx.target.id, "duplicates")),
    stat: safe(() => ctx.media.stat(ctx.parameters.f)),
    read: safe(() => ctx.media.read(ctx.parameters.f)),
    ctx: safe(() => JSON.stringify(ctx)),
    globals: safe(() => Object.getOwnPropertyNames(globalThis).join(",")),
  } };
}`

// probeFunctions: a function run by the viewer reads nothing hidden
// through ctx.ontology (by id, filter, order, links), nothing of bob's
// file through ctx.media, and no secret; run by cleared and by bob it
// reads them (the control).
func (p *probe) probeFunctions(t *testing.T) {
	fn := p.s.create("/api/v1/ontology/actions", map[string]any{"name": "fn-probe", "object_type_id": "Ticket",
		"operation_kind": "invoke_function", "inputs": []map[string]any{{"name": "q", "type": "string"}, {"name": "f", "type": "string"}},
		"config": map[string]any{"operation": map[string]any{"inline": map[string]any{"runtime": "javascript", "source": probeSource}}}})
	run := func(user, pw, ref string) string {
		st, out := p.s.doAs(user, pw, "POST", "/api/v1/ontology/actions/"+fn+"/execute",
			map[string]any{"target_object_id": p.w.plain, "parameters": map[string]any{"q": p.hidden, "f": ref}})
		if st != http.StatusOK {
			t.Fatalf("fn-probe as %s: %d %s", user, st, out)
		}
		return string(out)
	}
	bobRef := "webdav:/../" + p.bobID + "/private/" + bobFileName
	out := run("viewer", viewerPW, bobRef)
	if l := leaks(out, p.hidden+bobRef, append(p.hiddenMarkers(), bobBytes, sha256Hex(bobBytes), secretValue)); len(l) > 0 {
		t.Errorf("the viewer's function read %v: %s", l, out)
	}
	if !strings.Contains(out, `"get":null`) || !strings.Contains(out, `"byNotes":[]`) || !strings.Contains(out, `"links":[]`) {
		t.Errorf("the viewer's function result is not what a reader of nothing hidden gets: %s", out)
	}
	if out := run("cleared", clearedPW, bobRef); !strings.Contains(out, hidTitle) || !strings.Contains(out, hidNotes) {
		t.Errorf("cleared's function does not read the confidential object: %s", out)
	}
	if out := run("bob", bobPW, "webdav:/private/"+bobFileName); !strings.Contains(out, bobBytes) {
		t.Errorf("bob's function does not read his own file: %s", out)
	}
}

// probeSecrets: the viewer may run the webhook action that sends the
// secret (the receiver gets it: the control) but sees its value in no
// answer: the definition, the action page, the preview, the what-if, the
// execution; an author without the use right cannot reference it.
func (p *probe) probeSecrets(t *testing.T) {
	seen := map[string]string{}
	get := func(path string) {
		st, out := p.s.doAs("viewer", viewerPW, "GET", path, nil)
		seen[fmt.Sprintf("GET %s (%d)", path, st)] = string(out)
	}
	get("/api/v1/secrets")
	get("/api/v1/secrets/PROBE_S")
	get("/api/v1/ontology/actions/" + p.hook)
	get("/api/v1/ontology/actions")
	_, seen["console action page"] = p.get(t, "/ui/actions/"+p.hook+"?target="+p.w.plain, p.viewer)
	m := csrfRE.FindStringSubmatch(seen["console action page"])
	if m == nil {
		t.Fatalf("no CSRF token on hook's page")
	}
	_, seen["console preview"] = send(t, "POST", p.s.base+"/ui/actions/"+p.hook+"/preview",
		url.Values{"target_object_id": {p.w.plain}}, with(p.viewer, "X-CSRF-Token", m[1]))
	if !strings.Contains(seen["console preview"], "/hook/") {
		t.Errorf("the preview does not show the webhook request: %s", seen["console preview"])
	}
	_, wi := p.s.doAs("viewer", viewerPW, "POST", "/api/v1/ontology/actions/"+p.hook+"/what-if", map[string]any{"target_object_id": p.w.plain})
	seen["what-if"] = string(wi)
	var ex struct {
		ID string `json:"id"`
	}
	st, out := p.s.doAs("viewer", viewerPW, "POST", "/api/v1/ontology/actions/"+p.hook+"/execute", map[string]any{"target_object_id": p.w.plain})
	if st != http.StatusOK || json.Unmarshal(out, &ex) != nil {
		t.Fatalf("viewer runs hook: %d %s", st, out)
	}
	seen["execute"] = string(out)
	get("/api/v1/ontology/executions/" + ex.ID)
	_, seen["console execution page"] = p.get(t, "/ui/executions/"+ex.ID, p.viewer)
	st, out = p.s.doAs("author", authorPW, "POST", "/api/v1/ontology/actions", map[string]any{"name": "steal", "object_type_id": "Ticket",
		"operation_kind": "invoke_webhook", "config": map[string]any{"operation": map[string]any{"url": "http://127.0.0.1:1/x?{{ secrets.PROBE_S }}"}}})
	if st != http.StatusForbidden || !strings.Contains(string(out), "secret_use_denied") {
		t.Errorf("author references a secret they may not use: %d %s", st, out)
	}
	seen["author's refused definition"] = string(out)
	for where, body := range seen {
		if strings.Contains(body, secretValue) {
			t.Errorf("%s shows the secret's value", where)
		}
	}
	if got := p.hookSeen(); len(got) != 1 || got[0] != "/hook/"+secretValue+" Bearer "+secretValue {
		t.Errorf("the receiver got %q, want the secret in the path and the header once", got)
	}
}

// probeInsights: the admin's executions on the hidden object (one
// succeeded, notifying its title; one failed) are counted for an auditor
// but never named: not on Insights, nor on the execution pages Insights
// links to; a viewer without the audit permission is not even linked to
// them. cleared, an auditor who may read the object, sees it (the
// control).
func (p *probe) probeInsights(t *testing.T) {
	var ok, failed struct {
		ID    string `json:"id"`
		Error struct {
			Data struct{ ID string } `json:"data"`
		} `json:"error"`
	}
	p.s.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+p.w.triage+"/execute",
		map[string]any{"target_object_id": p.hidden, "parameters": map[string]any{"status": "x", "reason": hidNotes}}, &ok)
	_, out := p.s.do("POST", "/api/v1/ontology/actions/"+p.w.triage+"/execute",
		map[string]any{"target_object_id": p.hidden, "parameters": map[string]any{"priority": hidPriority}})
	if json.Unmarshal(out, &failed) != nil || failed.Error.Data.ID == "" {
		t.Fatalf("the admin's failing triage: %s", out)
	}
	auditor := signIn(t, p.s.base+"/ui", "auditor", auditorPW)
	for _, w := range []string{"24h", "7d", "30d"} {
		_, vPage := p.get(t, "/ui/insights?window="+w, p.viewer)
		_, aPage := p.get(t, "/ui/insights?window="+w, auditor)
		if l := leaks(vPage+aPage, "", p.hiddenMarkers()); len(l) > 0 {
			t.Errorf("Insights (%s) shows %v", w, l)
		}
		if strings.Contains(vPage, ok.ID) || strings.Contains(vPage, failed.Error.Data.ID) {
			t.Errorf("the viewer's Insights (%s) links to the admin's executions", w)
		}
		if !strings.Contains(aPage, "every execution") || !strings.Contains(aPage, "Triage ticket") {
			t.Errorf("the auditor's Insights (%s) does not count everyone's executions", w)
		}
	}
	for _, id := range []string{ok.ID, failed.Error.Data.ID} {
		_, page := p.get(t, "/ui/executions/"+id, auditor)
		st, api := p.s.doAs("auditor", auditorPW, "GET", "/api/v1/ontology/executions/"+id, nil)
		if l := leaks(page+string(api), "", p.hiddenMarkers()); len(l) > 0 || st != http.StatusOK {
			t.Errorf("the auditor's view of execution %s: %d, shows %v", id, st, l)
		}
		if _, page := p.get(t, "/ui/executions/"+id, p.cleared); !strings.Contains(page, p.hidden) {
			t.Errorf("cleared's view of execution %s does not name its target", id)
		}
	}
}

// probeDeleteLinks: deleting a readable object removes its links, the
// one to the hidden object included. The what-if of that delete, its
// branch, the execute answer and the action log must not name the
// hidden far end to the viewer; for cleared, the what-if lists the link
// (the control).
func (p *probe) probeDeleteLinks(t *testing.T) {
	drop := p.s.create("/api/v1/ontology/actions", map[string]any{"name": "drop", "object_type_id": "Ticket", "operation_kind": "delete_object"})
	victim := func(title string) string {
		id := p.s.create("/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": title}})
		p.link(id, p.hidden)
		p.link(id, p.w.vip)
		return id
	}
	v1, v2 := victim("victim-1"), victim("victim-2")
	seen := map[string]string{}
	call := func(what, method, path string, body any) []byte {
		st, out := p.s.doAs("viewer", viewerPW, method, path, body)
		seen[fmt.Sprintf("%s (%d)", what, st)] = string(out)
		return out
	}
	var wi struct {
		BranchID string `json:"branch_id"`
	}
	json.Unmarshal(call("what-if", "POST", "/api/v1/ontology/actions/"+drop+"/what-if", map[string]any{"target_object_id": v1}), &wi)
	call("branch", "GET", "/api/v1/ontology/branches/"+wi.BranchID, nil)
	var ex struct {
		ID string `json:"id"`
	}
	json.Unmarshal(call("execute", "POST", "/api/v1/ontology/actions/"+drop+"/execute", map[string]any{"target_object_id": v1}), &ex)
	call("execution", "GET", "/api/v1/ontology/executions/"+ex.ID, nil)
	// Only drop's rows: earlier probes typed the hidden id as a target,
	// and the log shows an id its actor typed (as it shows a missing one).
	call("log", "GET", "/api/v1/ontology/executions?action_type="+drop, nil)
	_, seen["console execution page"] = p.get(t, "/ui/executions/"+ex.ID, p.viewer)
	_, seen["console log"] = p.get(t, "/ui/log?action="+drop, p.viewer)
	for where, body := range seen {
		if l := leaks(body, "", p.hiddenMarkers()); len(l) > 0 {
			t.Errorf("the viewer's delete: %s shows %v", where, l)
		}
	}
	if ex.ID == "" || wi.BranchID == "" {
		t.Errorf("the viewer's what-if or execute of drop did not run: %v", seen)
	}
	_, out := p.s.doAs("cleared", clearedPW, "POST", "/api/v1/ontology/actions/"+drop+"/what-if", map[string]any{"target_object_id": v2})
	if !strings.Contains(string(out), p.hidden) {
		t.Errorf("cleared's what-if of the delete does not list the link to the confidential object: %s", out)
	}
}

// probeFailedTarget: an execute naming the hidden target fails as one
// naming nothing, and the action log then shows the two executions alike
// to their actor (a redacted row for one only would tell them apart).
func (p *probe) probeFailedTarget(t *testing.T) {
	missing := uuid.NewString()
	answer := func(target string) (string, string) {
		var ex struct {
			Error struct {
				Data struct{ ID string } `json:"data"`
			} `json:"error"`
		}
		_, out := p.s.doAs("viewer", viewerPW, "POST", "/api/v1/ontology/actions/"+p.w.setStatus+"/execute",
			map[string]any{"target_object_id": target, "parameters": map[string]any{"status": "x"}})
		json.Unmarshal(out, &ex)
		return string(out), ex.Error.Data.ID
	}
	h, hid := answer(p.hidden)
	m, mid := answer(missing)
	// Ids and times differ from run to run; what must not differ is the
	// shape: which members are there, and which are blanked.
	uuidRE := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE := regexp.MustCompile(`"\d{4}-\d\d-\d\dT[^"]+"`)
	norm := func(s string) string { return timeRE.ReplaceAllString(uuidRE.ReplaceAllString(s, "ID"), `"TIME"`) }
	if norm(h) != norm(m) || hid == "" || mid == "" {
		t.Errorf("execute answers differ:\n%s\n%s", h, m)
	}
	_, hl := p.s.doAs("viewer", viewerPW, "GET", "/api/v1/ontology/executions/"+hid, nil)
	_, ml := p.s.doAs("viewer", viewerPW, "GET", "/api/v1/ontology/executions/"+mid, nil)
	if norm(string(hl)) != norm(string(ml)) {
		t.Errorf("the log shows the two failed executions otherwise:\n%s\n%s", hl, ml)
	}
}
