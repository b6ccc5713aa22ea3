package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

var (
	groupRE     = regexp.MustCompile(`(?s)<section class="group">\s*<h2>(.*?)</h2>(.*?)</section>`)
	actionRE    = regexp.MustCompile(`<a href="/ui/actions/[^"]+">([^<]*)</a>`)
	targetRE    = regexp.MustCompile(`<a href="/ui/actions/[^"?]+\?target=([^"]+)">([^<]*)</a>`)
	referenceRE = regexp.MustCompile(`<option value="([^"]+)">([^<]*) \(`)
	logRowRE    = regexp.MustCompile(`<tr class="status-([a-z_-]+)"><td><a href="/ui/executions/[^"]+">[^<]*</a></td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>`)
)

// groups reads the action list: each object type's heading and the
// actions listed under it, in page order.
func groups(page string) [][]string {
	var out [][]string
	for _, m := range groupRE.FindAllStringSubmatch(page, -1) {
		g := []string{m[1]}
		for _, a := range actionRE.FindAllStringSubmatch(m[2], -1) {
			g = append(g, a[1])
		}
		out = append(out, g)
	}
	return out
}

// TestConsoleActionList checks the action list's grouping by object type
// and its search (?q=) over name, display name and description.
func TestConsoleActionList(t *testing.T) {
	s := startStack(t)
	s.seed()
	s.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Asset",
		"properties": []map[string]any{{"name": "tag", "type": "string"}}}, nil)
	s.create("/api/v1/ontology/actions", map[string]any{"name": "retire", "display_name": "Retire asset",
		"description": "Take an asset out of service.", "object_type_id": "Asset", "operation_kind": "update_object",
		"config": map[string]any{"operation": map[string]any{"static_patch": map[string]any{"tag": "retired"}}}})
	admin := signIn(t, s.base+"/ui", "admin", adminPassword)

	for _, c := range []struct {
		q    string
		want [][]string
	}{
		{"", [][]string{{"Asset", "Retire asset"}, {"Ticket", "archive", "mark-duplicate", "set-status", "Triage ticket"}}},
		{"retire", [][]string{{"Asset", "Retire asset"}}},
		{"TRIAGE", [][]string{{"Ticket", "Triage ticket"}}},       // the name, case-folded
		{"out of service", [][]string{{"Asset", "Retire asset"}}}, // the description
		{"nothing-like-this", nil},
	} {
		_, page := send(t, "GET", s.base+"/ui/?q="+url.QueryEscape(c.q), nil, admin)
		if got := groups(page); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("actions for q=%q: %v, want %v", c.q, got, c.want)
		}
		if c.want == nil && !strings.Contains(page, "No actions you may run match") {
			t.Errorf("q=%q: no 'nothing matches' message: %s", c.q, page)
		}
	}
}

// TestConsoleTargetSearchFindsEveryReadableObject checks that the target
// and reference pickers search every object the user may read, not a
// first page of them, that an unreadable object is never found, and that
// a picker lists at most 20 objects.
func TestConsoleTargetSearchFindsEveryReadableObject(t *testing.T) {
	s := startStack(t)
	w := s.seed()
	base := s.base + "/ui"
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	s.fillTickets(510)
	var open, secret string
	s.inTx(func(tx *gorm.DB) {
		open = s.ticket(tx, "needle-open", "")
		secret = s.ticket(tx, "needle-secret", "confidential")
	})

	viewer := signIn(t, base, "viewer", "viewer-password-1")
	admin := signIn(t, base, "admin", adminPassword)
	for _, c := range []struct {
		who  string
		hdr  map[string]string
		path string
		re   *regexp.Regexp
		want []string
	}{
		{"viewer", viewer, "/actions/triage/targets?q=needle", targetRE, []string{open}},
		{"viewer", viewer, "/objects/search?type=Ticket&name=p.dup&q=needle", referenceRE, []string{open}},
		{"viewer", viewer, "/actions/triage/targets?q=" + secret, targetRE, nil}, // by id
		{"admin", admin, "/actions/triage/targets?q=needle", targetRE, []string{open, secret}},
		{"admin", admin, "/actions/triage/targets?q=" + secret, targetRE, []string{secret}},
		{"admin", admin, "/actions/triage/targets?q=" + w.vip, targetRE, []string{w.vip}},
	} {
		_, body := send(t, "GET", base+c.path, nil, c.hdr)
		var got []string
		for _, m := range c.re.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %v, want %v\n%s", c.who, c.path, got, c.want, body)
		}
	}
	_, body := send(t, "GET", base+"/actions/triage/targets?q=filler", nil, viewer)
	if n := len(targetRE.FindAllString(body, -1)); n != 20 {
		t.Errorf("a search matching 510 objects lists %d, want 20", n)
	}
	// Primary-key matches come first: "open" is the status of every
	// older filler, and the title of the newest ticket only.
	_, body = send(t, "GET", base+"/actions/triage/targets?q=open", nil, viewer)
	if m := targetRE.FindAllStringSubmatch(body, -1); len(m) != 20 || m[0][1] != open {
		t.Errorf("q=open: %d listed, first %v; want 20 with needle-open (its title matches) first", len(m), m[:min(len(m), 1)])
	}
}

// fillTickets creates n public tickets straight through the store (the
// API would take n requests), older than any created afterwards.
func (s *stack) fillTickets(n int) {
	s.inTx(func(tx *gorm.DB) {
		for i := range n {
			s.ticket(tx, fmt.Sprintf("filler-%03d", i), "")
		}
	})
}

func (s *stack) inTx(fn func(tx *gorm.DB)) {
	s.t.Helper()
	err := s.app.DB.Transaction(func(tx *gorm.DB) error { fn(tx); return nil })
	if err != nil {
		s.t.Fatal(err)
	}
}

// ticket creates a ticket with the title and marking ("" = public).
func (s *stack) ticket(tx *gorm.DB, title, marking string) string {
	s.t.Helper()
	o, err := s.app.Store.CreateObject(context.Background(), tx, "Ticket",
		map[string]any{"title": title, "status": "open"}, marking, "", "")
	if err != nil {
		s.t.Fatalf("create ticket %s: %v", title, err)
	}
	return o.ID
}

type logRow struct{ Status, Action, Actor, Kind string }

// logRows reads the action log's rows as the user sees them.
func logRows(t *testing.T, base string, hdr map[string]string, query string) (int, []logRow) {
	t.Helper()
	resp, page := send(t, "GET", base+"/log?"+query, nil, hdr)
	var out []logRow
	for _, m := range logRowRE.FindAllStringSubmatch(page, -1) {
		out = append(out, logRow{Status: m[1], Action: m[2], Actor: m[3], Kind: m[4]})
	}
	return resp.StatusCode, out
}

// TestConsoleLogFilters checks the action log's filters (action, actor,
// status, kind, date) and that a user without the audit permission sees
// only their own executions.
func TestConsoleLogFilters(t *testing.T) {
	s := startStack(t)
	w := s.seed()
	base := s.base + "/ui"
	today := time.Now().UTC()
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	execute := func(user, pw, action string, params map[string]any) {
		st, out := s.doAs(user, pw, "POST", "/api/v1/ontology/actions/"+action+"/execute",
			map[string]any{"target_object_id": w.plain, "parameters": params})
		if st >= 500 {
			t.Fatalf("execute %s as %s: %d %s", action, user, st, out)
		}
	}
	execute("admin", adminPassword, "triage", map[string]any{"status": "in_progress"})
	execute("admin", adminPassword, "triage", map[string]any{"priority": "low"}) // no status: fails
	execute("viewer", "viewer-password-1", "set-status", map[string]any{"status": "waiting"})
	s.must(http.StatusOK, "POST", "/api/v1/ontology/types/Ticket/objects/"+w.plain+"/properties/status/inline-edit",
		map[string]any{"value": "done"}, nil)
	admin := signIn(t, base, "admin", adminPassword)
	viewer := signIn(t, base, "viewer", "viewer-password-1")

	day := func(d int) string { return today.AddDate(0, 0, d).Format("2006-01-02") }
	ok, failed := rowsOf("succeeded"), rowsOf("failed")
	for _, c := range []struct {
		who   string
		hdr   map[string]string
		query string
		want  []logRow
	}{
		{"admin", admin, "", []logRow{ok("set-status", "admin", "inline-edit"), ok("set-status", "viewer", "execute"),
			failed("Triage ticket", "admin", "execute"), ok("Triage ticket", "admin", "execute")}},
		{"admin", admin, "action=" + w.triage, []logRow{failed("Triage ticket", "admin", "execute"), ok("Triage ticket", "admin", "execute")}},
		{"admin", admin, "actor=viewer", []logRow{ok("set-status", "viewer", "execute")}},
		{"admin", admin, "status=failed", []logRow{failed("Triage ticket", "admin", "execute")}},
		{"admin", admin, "kind=inline-edit", []logRow{ok("set-status", "admin", "inline-edit")}},
		{"admin", admin, "action=" + w.setStatus + "&kind=execute&status=succeeded", []logRow{ok("set-status", "viewer", "execute")}},
		{"admin", admin, "since=" + day(-1) + "&status=failed", []logRow{failed("Triage ticket", "admin", "execute")}},
		{"admin", admin, "since=" + day(2), nil},
		{"viewer", viewer, "", []logRow{ok("set-status", "viewer", "execute")}},
		{"viewer", viewer, "actor=admin", nil},
	} {
		st, got := logRows(t, base, c.hdr, c.query)
		if st != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s's log ?%s: %d %v, want %v", c.who, c.query, st, got, c.want)
		}
	}
	// Targets by title, linked to the object.
	if _, page := send(t, "GET", base+"/log", nil, admin); !strings.Contains(page, `<a href="/ui/objects/Ticket/`+w.plain+`">plain-1</a>`) {
		t.Errorf("the log does not name its target by title:\n%s", page)
	}
	for _, q := range []string{"since=yesterday", "status=bogus", "kind=bogus"} {
		if st, _ := logRows(t, base, admin, q); st != http.StatusBadRequest {
			t.Errorf("log ?%s: %d, want 400", q, st)
		}
	}
}

// rowsOf makes log rows of one status.
func rowsOf(status string) func(action, actor, kind string) logRow {
	return func(action, actor, kind string) logRow {
		return logRow{Status: status, Action: action, Actor: actor, Kind: kind}
	}
}

// TestConsoleOverrideFromTargetHidesField checks, without a browser, that
// an override conditioned on the target's property hides a field (and
// leaves it shown for a target without that value).
func TestConsoleOverrideFromTargetHidesField(t *testing.T) {
	s := startStack(t)
	w := s.seed()
	admin := signIn(t, s.base+"/ui", "admin", adminPassword)
	field := regexp.MustCompile(`<div class="field[^"]*" id="field-internal_note"[^>]*>`)
	for target, hidden := range map[string]bool{w.vip: true, w.plain: false} {
		_, page := send(t, "GET", s.base+"/ui/actions/triage?target="+target, nil, admin)
		tag := field.FindString(page)
		if tag == "" || strings.Contains(tag, " hidden") != hidden {
			t.Errorf("target %s: internal_note field %q, want hidden=%v", target, tag, hidden)
		}
	}
}

// TestConsoleUndoOfferedOnlyWhenRevertWouldRun checks that an execution's
// page offers Undo only where the revert service would take it: not for
// an action with allow_revert false, not once reverted.
func TestConsoleUndoOfferedOnlyWhenRevertWouldRun(t *testing.T) {
	s := startStack(t)
	w := s.seed()
	final := s.create("/api/v1/ontology/actions", map[string]any{
		"name": "set-status-final", "object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "status", "type": "string", "required": true}},
		"config": map[string]any{"allow_revert": false,
			"operation": map[string]any{"property_mappings": []map[string]any{{"property": "status", "input": "status"}}}},
	})
	run := func(action, target string) string {
		var ex struct {
			ID string `json:"id"`
		}
		s.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+action+"/execute",
			map[string]any{"target_object_id": target, "parameters": map[string]any{"status": "x-" + action}}, &ex)
		return ex.ID
	}
	admin := signIn(t, s.base+"/ui", "admin", adminPassword)
	offered := func(id string) bool {
		_, page := send(t, "GET", s.base+"/ui/executions/"+id, nil, admin)
		return strings.Contains(page, `id="undo"`)
	}
	revertible, notRevertible := run(w.setStatus, w.plain), run(final, w.vip)
	if !offered(revertible) {
		t.Error("no Undo for a revertible execution")
	}
	if offered(notRevertible) {
		t.Error("Undo offered for an action with allow_revert false")
	}
	s.must(http.StatusOK, "POST", "/api/v1/ontology/executions/"+revertible+"/revert", map[string]any{"justification": "test"}, nil)
	if offered(revertible) {
		t.Error("Undo offered for an execution already reverted")
	}
}

// TestConsoleActionListPastRefusedActions: actions a user may not run do
// not crowd out those they may. 505 ops-only actions sort before the one
// the viewer may run; the list still shows it.
func TestConsoleActionListPastRefusedActions(t *testing.T) {
	s := startStack(t)
	s.seed()
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	for i := range 505 {
		s.create("/api/v1/ontology/actions", map[string]any{"name": fmt.Sprintf("aa-ops-%03d", i), "object_type_id": "Ticket",
			"operation_kind": "update_object", "policy": map[string]any{"any_role": []string{"ops"}},
			"config": map[string]any{"operation": map[string]any{"static_patch": map[string]any{"status": "x"}}}})
	}
	s.create("/api/v1/ontology/actions", map[string]any{"name": "zz-for-everyone", "object_type_id": "Ticket",
		"operation_kind": "update_object",
		"config":         map[string]any{"operation": map[string]any{"static_patch": map[string]any{"status": "y"}}}})
	viewer := signIn(t, s.base+"/ui", "viewer", "viewer-password-1")
	_, page := send(t, "GET", s.base+"/ui/", nil, viewer)
	if !strings.Contains(page, "zz-for-everyone") || strings.Contains(page, "aa-ops-") {
		t.Errorf("viewer's action list: %v", groups(page))
	}
}

// TestConsoleExecutionShowsChanges checks an execution's page: the action
// by display name, the target and edited object by title, parameters as
// values (not JSON escapes), and only the properties that changed.
func TestConsoleExecutionShowsChanges(t *testing.T) {
	s := startStack(t)
	w := s.seed()
	var ex struct {
		ID    string `json:"id"`
		Edits []struct {
			Before, After map[string]any
		} `json:"edits"`
	}
	s.must(http.StatusOK, "POST", "/api/v1/ontology/actions/triage/execute", map[string]any{"target_object_id": w.plain,
		"parameters": map[string]any{"status": "open", "priority": "high", "reason": "<b>now</b> & here"}}, &ex)
	if len(ex.Edits) != 1 || ex.Edits[0].After["status"] != "open" {
		t.Fatalf("the record should keep the unchanged status (the inverse may need it): %+v", ex.Edits)
	}
	admin := signIn(t, s.base+"/ui", "admin", adminPassword)
	_, page := send(t, "GET", s.base+"/ui/executions/"+ex.ID, nil, admin)
	for _, want := range []string{
		"<h1>Triage ticket ",
		`<dt>Target</dt><dd><a href="/ui/objects/Ticket/` + w.plain + `">plain-1</a>`,
		`<a href="/ui/objects/`, `">plain-1</a></td>`,
		"<td>priority</td><td></td><td>high</td>",
		`<dt title="reason">Reason</dt><dd>&lt;b&gt;now&lt;/b&gt; &amp; here</dd>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("execution page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<td>status</td>") || strings.Contains(page, `\u003c`) {
		t.Errorf("execution page lists an unchanged property or a JSON escape:\n%s", page)
	}
}

// TestConsoleFormIsTheAPIForm checks, without a browser, that the console
// draws the form POST .../form answers (one evaluator, one model): with
// priority high on a VIP ticket both overrides of reason apply, the later
// one winning the label, and each field's label, requiredness and
// visibility are the API's.
func TestConsoleFormIsTheAPIForm(t *testing.T) {
	s := startStack(t)
	w := s.seed()
	admin := signIn(t, s.base+"/ui", "admin", adminPassword)
	_, page := send(t, "GET", s.base+"/ui/actions/triage?target="+w.vip, nil, admin)
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the action page")
	}
	typed := url.Values{"csrf": {m[1]}, "target_object_id": {w.vip}, "p.status": {"open"}, "p.priority": {"high"}}
	_, frag := send(t, "POST", s.base+"/ui/actions/triage/form", typed, admin)
	var form struct {
		Sections []struct {
			Parameters []struct {
				Name, Label       string
				Required, Visible bool
			}
		}
	}
	s.must(http.StatusOK, "POST", "/api/v1/ontology/actions/triage/form", map[string]any{"target_object_id": w.vip,
		"parameters": map[string]any{"status": "open", "priority": "high"}}, &form)
	n := 0
	for _, sec := range form.Sections {
		for _, p := range sec.Parameters {
			n++
			field := regexp.MustCompile(`(?s)<div class="field[^"]*" id="field-` + p.Name + `" data-required="(true|false)"([^>]*)>.*?<label[^>]*>([^<]*)`).FindStringSubmatch(frag)
			if field == nil {
				t.Fatalf("no field %s in %s", p.Name, frag)
			}
			if field[1] != fmt.Sprint(p.Required) || strings.Contains(field[2], "hidden") == p.Visible || strings.TrimSpace(field[3]) != p.Label {
				t.Errorf("field %s: console %q, API %+v", p.Name, field[0], p)
			}
			if p.Name == "reason" && (p.Label != "Reason (VIP ticket)" || !p.Required) {
				t.Errorf("reason: %+v, want both overrides applied (the VIP one's label)", p)
			}
		}
	}
	if n != 4 {
		t.Fatalf("%d parameters in the API's form", n)
	}
	// The execution's page shows when it began running.
	var ex struct {
		ID string `json:"id"`
	}
	s.must(http.StatusOK, "POST", "/api/v1/ontology/actions/triage/execute", map[string]any{"target_object_id": w.plain,
		"parameters": map[string]any{"status": "open"}}, &ex)
	_, page = send(t, "GET", s.base+"/ui/executions/"+ex.ID, nil, admin)
	if m := regexp.MustCompile(`<dd id="started-at">([^<]+)</dd>`).FindStringSubmatch(page); m == nil || strings.TrimSpace(m[1]) == "" {
		t.Errorf("the execution page's start: %v", m)
	}
}
