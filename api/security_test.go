package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/users"
)

// tokenInfo decodes a POST /auth/tokens answer.
type tokenInfo struct {
	Token string `json:"token"`
	Info  struct {
		ID        string    `json:"id"`
		Guest     bool      `json:"guest"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"token_info"`
}

func (f *foundation) issueWith(t *testing.T, token, body string) tokenInfo {
	t.Helper()
	r := f.bearer(t, token, "POST", "/api/v1/auth/tokens", body)
	var tok tokenInfo
	if err := json.Unmarshal(r.body, &tok); err != nil || r.status != 201 {
		t.Fatalf("issue token through a token: %d %s", r.status, r.body)
	}
	return tok
}

// users:admin creates accounts under the same rules as it edits them: no
// roles, permissions, attributes, clearance or organization it could not
// set on edit; and it edits only accounts that hold no more than itself
// (issue 13, finding 1).
func TestUsersAdminCreateAndEditPrivileges(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		for _, body := range []string{
			`{"username":"manager","password":"manager-password","permissions":["users:admin","ontology:write"],"clearance":"confidential","organization":"acme"}`,
			`{"username":"secret-keeper","password":"secret-keeper-password","clearance":"pii","organization":"acme"}`,
			`{"username":"wildcard","password":"wildcard-password","permissions":["*:*"],"organization":"acme"}`,
			`{"username":"regional","password":"regional-password","attributes":{"region":"eu"},"organization":"acme"}`,
			`{"username":"foreigner","password":"foreigner-password","organization":"globex"}`,
			`{"username":"clerk","password":"clerk-password","permissions":["ontology:write"],"clearance":"confidential","organization":"acme"}`,
		} {
			if r := f.json(t, "admin", "POST", "/api/v1/users", body); r.status != 201 {
				t.Fatalf("admin creating %s: %d %s", body, r.status, r.body)
			}
		}
		for _, body := range []string{
			`{"username":"x1","password":"x-password-1","roles":["admin"]}`,
			`{"username":"x2","password":"x-password-1","permissions":["*:*"]}`,
			`{"username":"x3","password":"x-password-1","permissions":["users:admin"]}`,
			`{"username":"x4","password":"x-password-1","clearance":"pii"}`,
			`{"username":"x5","password":"x-password-1","clearance":"confidential"}`,
			`{"username":"x6","password":"x-password-1","organization":"globex"}`,
			`{"username":"x7","password":"x-password-1","organization":""}`,
			`{"username":"x8","password":"x-password-1","attributes":{"region":"eu"}}`,
			`{"username":"x9","password":"x-password-1","roles":["ops"]}`,
		} {
			r := f.json(t, "manager", "POST", "/api/v1/users", body)
			if r.status != 403 || r.code() != "PermissionDenied" {
				t.Errorf("users:admin creating %s: %d %s, want 403 PermissionDenied", body, r.status, r.body)
			}
		}
		for _, name := range []string{"x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9"} {
			if r := f.json(t, "admin", "GET", "/api/v1/users/"+name, ""); r.status != 404 {
				t.Errorf("refused user %s exists: %d %s", name, r.status, r.body)
			}
		}
		// Editing (a password change is a takeover) reaches only accounts
		// holding no more than the manager.
		for _, target := range []string{"secret-keeper", "wildcard", "regional", "foreigner", "admin", "manager"} {
			r := f.json(t, "manager", "PATCH", "/api/v1/users/"+target, `{"password":"taken-over-1"}`)
			if r.status != 403 || r.code() != "PermissionDenied" {
				t.Errorf("users:admin setting the password of %s: %d %s, want 403", target, r.status, r.body)
			}
		}
		// Defaults are what it may grant: the lowest clearance and its own
		// organization.
		r := f.json(t, "manager", "POST", "/api/v1/users", `{"username":"junior","password":"junior-password","roles":[],"permissions":[],"clearance":"public","organization":"acme"}`)
		var junior struct {
			Clearance    string `json:"clearance"`
			Organization string `json:"organization"`
		}
		if err := json.Unmarshal(r.body, &junior); err != nil || r.status != 201 || junior.Clearance != "public" || junior.Organization != "acme" {
			t.Fatalf("users:admin creating a plain account: %d %s", r.status, r.body)
		}
		r = f.json(t, "manager", "POST", "/api/v1/users", `{"username":"junior2","password":"junior-password"}`)
		if err := json.Unmarshal(r.body, &junior); err != nil || r.status != 201 || junior.Organization != "acme" {
			t.Fatalf("users:admin creating an account without organization: %d %s (want its own organization)", r.status, r.body)
		}

		for _, body := range []string{`{"organization":"globex"}`, `{"attributes":{"region":"eu"}}`, `{"roles":[]}`} {
			if r := f.json(t, "manager", "PATCH", "/api/v1/users/junior", body); r.status != 403 {
				t.Errorf("users:admin PATCH junior %s: %d %s, want 403", body, r.status, r.body)
			}
		}
		for _, target := range []string{"junior", "clerk"} {
			if r := f.json(t, "manager", "PATCH", "/api/v1/users/"+target, `{"password":"reset-password-1","disabled":false}`); r.status != 200 {
				t.Errorf("users:admin resetting %s: %d %s", target, r.status, r.body)
			}
		}
		if r := f.json(t, "admin", "PATCH", "/api/v1/users/junior", `{"organization":"globex","clearance":"pii"}`); r.status != 200 {
			t.Errorf("admin changing organization and clearance: %d %s", r.status, r.body)
		}
	})
}

// A guest session cannot create users or change passwords, roles or
// permissions, even an admin's (finding 3); the same admin's full token
// can.
func TestGuestSessionCannotManageUsers(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		guest, _ := f.issue(t, "admin", `{"guest":true}`)
		full, _ := f.issue(t, "admin", `{}`)
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/api/v1/users", `{"username":"mallory","password":"mallory-password","roles":["admin"]}`},
			{"POST", "/api/v1/users", `{"username":"mallory","password":"mallory-password"}`},
			{"PATCH", "/api/v1/users/plain", `{"password":"taken-over-1"}`},
			{"PATCH", "/api/v1/users/plain", `{"roles":["admin"]}`},
			{"PATCH", "/api/v1/users/plain", `{"permissions":["*:*"]}`},
			{"PATCH", "/api/v1/users/admin", `{"password":"taken-over-1"}`},
		} {
			r := f.bearer(t, guest, c.method, c.path, c.body)
			if r.status != 403 || r.code() != "PermissionDenied" || !strings.Contains(string(r.body), "guest_session") {
				t.Errorf("guest %s %s %s: %d %s, want 403 guest_session", c.method, c.path, c.body, r.status, r.body)
			}
		}
		if r := f.json(t, "plain", "GET", "/api/v1/me", ""); r.status != 200 {
			t.Errorf("plain's password changed by a guest session: %d", r.status)
		}
		if r := f.json(t, "admin", "GET", "/api/v1/users/mallory", ""); r.status != 404 {
			t.Errorf("a guest session created mallory: %d", r.status)
		}
		if r := f.bearer(t, full, "POST", "/api/v1/users", `{"username":"mallory","password":"mallory-password"}`); r.status != 201 {
			t.Errorf("full admin token creating a user: %d %s", r.status, r.body)
		}
	})
}

// A token issued through a token expires no later than its parent and
// dies with it: revocation of any ancestor, its expiry, a password change
// (finding 3). Full tokens are held to the same chain.
func TestChildTokensDieWithTheirParent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		for _, guest := range []bool{true, false} {
			body := `{"ttl_seconds":600,"guest":` + map[bool]string{true: "true", false: "false"}[guest] + `}`
			parent, parentID := f.issue(t, "plain", body)
			child := f.issueWith(t, parent, `{"ttl_seconds":86400}`)
			grandchild := f.issueWith(t, child.Token, `{"ttl_seconds":86400}`)
			for _, tk := range []tokenInfo{child, grandchild} {
				if tk.Info.Guest != guest {
					t.Errorf("guest=%v: child token guest=%v", guest, tk.Info.Guest)
				}
				if tk.Info.ExpiresAt.After(time.Now().Add(601 * time.Second)) {
					t.Errorf("guest=%v: child expires at %v, after its parent (600 s)", guest, tk.Info.ExpiresAt)
				}
			}
			for _, tk := range []string{child.Token, grandchild.Token} {
				if r := f.bearer(t, tk, "GET", "/api/v1/me", ""); r.status != 200 {
					t.Fatalf("guest=%v: live child: %d %s", guest, r.status, r.body)
				}
			}
			if r := f.json(t, "plain", "DELETE", "/api/v1/auth/tokens/"+parentID, ""); r.status != 204 {
				t.Fatalf("revoke parent: %d %s", r.status, r.body)
			}
			for _, tk := range []string{parent, child.Token, grandchild.Token} {
				if r := f.bearer(t, tk, "GET", "/api/v1/me", ""); r.status != 401 {
					t.Errorf("guest=%v: token after its ancestor's revocation: %d, want 401", guest, r.status)
				}
			}
			r := f.json(t, "plain", "GET", "/api/v1/auth/tokens?page_size=100", "")
			var list struct {
				Data []struct {
					ID        string     `json:"id"`
					RevokedAt *time.Time `json:"revoked_at"`
				} `json:"data"`
			}
			if err := json.Unmarshal(r.body, &list); err != nil {
				t.Fatal(err)
			}
			for _, x := range list.Data {
				if (x.ID == child.Info.ID || x.ID == grandchild.Info.ID) && x.RevokedAt == nil {
					t.Errorf("guest=%v: descendant %s listed as not revoked", guest, x.ID)
				}
			}
		}

		// Expiry: a child asking for a day lives as long as its parent.
		parent, _ := f.issue(t, "plain", `{"ttl_seconds":1,"guest":true}`)
		child := f.issueWith(t, parent, `{"ttl_seconds":86400}`)
		time.Sleep(1200 * time.Millisecond)
		if r := f.bearer(t, child.Token, "GET", "/api/v1/me", ""); r.status != 401 {
			t.Errorf("child after its parent expired: %d, want 401", r.status)
		}

		// A password change ends the whole chain.
		parent, _ = f.issue(t, "plain", `{"guest":true}`)
		child = f.issueWith(t, parent, `{}`)
		if r := f.json(t, "admin", "PATCH", "/api/v1/users/plain", `{"password":"plain-password"}`); r.status != 200 {
			t.Fatalf("password change: %d %s", r.status, r.body)
		}
		if r := f.bearer(t, child.Token, "GET", "/api/v1/me", ""); r.status != 401 {
			t.Errorf("child after a password change: %d, want 401", r.status)
		}
	})
}

// Every response of the router is nosniff; every /api/v1 answer, the
// token secret's first of all, is no-store (finding 10, API half).
func TestSecurityHeaders(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		replies := map[string]reply{
			"healthz":      f.json(t, "", "GET", "/healthz", ""),
			"readyz":       f.json(t, "", "GET", "/readyz", ""),
			"metrics":      f.json(t, "", "GET", "/metrics", ""),
			"openapi":      f.json(t, "", "GET", "/openapi.yaml", ""),
			"no route":     f.json(t, "", "GET", "/nowhere", ""),
			"no method":    f.json(t, "", "DELETE", "/healthz", ""),
			"unauthorized": f.json(t, "", "GET", "/api/v1/me", ""),
			"me":           f.json(t, "plain", "GET", "/api/v1/me", ""),
			"token":        f.json(t, "plain", "POST", "/api/v1/auth/tokens", `{}`),
			"token list":   f.json(t, "plain", "GET", "/api/v1/auth/tokens", ""),
			"user create":  f.json(t, "admin", "POST", "/api/v1/users", `{"username":"hdr","password":"hdr-password"}`),
			"bad json":     f.json(t, "plain", "POST", "/api/v1/auth/tokens", `{"name":`),
		}
		for name, r := range replies {
			if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("%s (%d): X-Content-Type-Options %q, want nosniff", name, r.status, got)
			}
		}
		if replies["token"].status != 201 {
			t.Fatalf("token: %d %s", replies["token"].status, replies["token"].body)
		}
		for _, name := range []string{"unauthorized", "me", "token", "token list", "user create", "bad json"} {
			if got := replies[name].header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("%s: Cache-Control %q, want no-store", name, got)
			}
		}
	})
}

// errShape is an error answer with the ids it names blanked: what a
// writer learns from it.
func errShape(r ontoResp, ids ...string) string {
	s := r.raw
	for _, id := range ids {
		s = strings.ReplaceAll(s, id, "<id>")
	}
	return fmt.Sprintf("%d %s", r.status, s)
}

// A REST write of a reference names an object the writer may read, and
// one it may not read is answered exactly as a missing one, on every path
// that writes a reference: object create, replace and merge, a property's
// default, an action type's input default (finding 7).
func TestReferenceWritesApplyReadRule(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		person := e.expect(201, "", "admin", "POST", "/types", `{"name":"Person","properties":[{"name":"name","type":"string"}]}`).str("id")
		e.expect(201, "", "admin", "POST", "/types", fmt.Sprintf(`{"name":"Task","properties":[{"name":"title","type":"string"},
			{"name":"owner","type":{"type":"reference","object_type_id":%q}},
			{"name":"watchers","type":{"type":"array","element_type":{"type":"reference","object_type_id":%q}}}]}`, person, person))
		mk := func(body string) string {
			return e.expect(201, "", "admin", "POST", "/types/Person/objects", body).str("id")
		}
		hidden := map[string]string{
			"pii in acme":      mk(`{"properties":{"name":"Pia"},"marking":"pii","organization":"acme"}`),
			"public in globex": mk(`{"properties":{"name":"Gus"},"organization":"globex"}`),
			"public in no org": mk(`{"properties":{"name":"Nia"},"organization":""}`),
		}
		visible := mk(`{"properties":{"name":"Vic"},"organization":"acme"}`)
		missing := "0badc0de-0000-4000-8000-000000000001"
		task := e.expect(201, "", "clerk", "POST", "/types/Task/objects", `{"properties":{"title":"t"}}`).str("id")

		writes := []struct{ name, method, path, body string }{
			{"create", "POST", "/types/Task/objects", `{"properties":{"title":"x","owner":%q}}`},
			{"create array", "POST", "/types/Task/objects", `{"properties":{"title":"x","watchers":[%q]}}`},
			{"merge", "PATCH", "/types/Task/objects/" + task, `{"properties":{"owner":%q}}`},
			{"replace", "PUT", "/types/Task/objects/" + task, `{"properties":{"title":"t","owner":%q}}`},
			{"property default", "POST", "/types/Task/properties", `{"name":"reviewer","type":{"type":"reference","object_type_id":"` + person + `"},"default_value":%q}`},
			{"action input default", "POST", "/actions", `{"name":"assign","object_type_id":"Task","operation_kind":"update_object",
				"inputs":[{"name":"who","type":{"type":"reference","object_type_id":"` + person + `"},"default_value":%q}],
				"config":{"operation":{"property_mappings":[{"property":"owner","input":"who"}]}}}`},
		}
		for _, w := range writes {
			want := errShape(e.do("clerk", w.method, w.path, fmt.Sprintf(w.body, missing)), missing)
			if !strings.HasPrefix(want, "400 ") || !strings.Contains(want, "no such object") {
				t.Fatalf("%s with a missing id: %s", w.name, want)
			}
			for what, id := range hidden {
				if got := errShape(e.do("clerk", w.method, w.path, fmt.Sprintf(w.body, id)), id); got != want {
					t.Errorf("%s naming an object the writer may not read (%s):\n got %s\nwant %s (as for a missing id)", w.name, what, got, want)
				}
			}
		}
		// The objects it may read are fine, on every path.
		for _, w := range writes {
			body := fmt.Sprintf(w.body, visible)
			if w.name == "property default" || w.name == "action input default" {
				body = strings.Replace(body, "reviewer", "reviewer2", 1)
				body = strings.Replace(body, `"assign"`, `"assign2"`, 1)
			}
			if r := e.do("clerk", w.method, w.path, body); r.status >= 300 {
				t.Errorf("%s naming a readable object: %d %s", w.name, r.status, r.raw)
			}
		}
		// A reference someone else set is kept by a replace resending it,
		// though this writer may not read its object.
		e.expect(200, "", "writer", "PATCH", "/types/Task/objects/"+task, fmt.Sprintf(`{"properties":{"owner":%q}}`, hidden["pii in acme"]))
		e.expect(200, "", "clerk", "PUT", "/types/Task/objects/"+task, fmt.Sprintf(`{"properties":{"title":"renamed","owner":%q}}`, hidden["pii in acme"]))
	})
}

// The action log applies the read rule (finding 6): a caller with
// executions:read sees the parameters, justification and edits only of
// executions whose objects it may read; the other rows stay, redacted, so
// paging is unchanged. Admins see everything; an execution's actor sees its
// own on an object that no longer exists.
func TestActionLogAppliesReadRule(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		levels := auth.DefaultLevels
		us := &users.Store{DB: db, Levels: levels}
		ids := map[string]string{}
		for _, u := range []struct {
			name, clearance, org string
			roles, perms         []string
		}{
			{"admin", "pii", "", []string{"admin"}, nil},
			{"writer", "pii", "acme", nil, []string{"ontology:write"}},
			{"auditor", "public", "acme", nil, []string{"executions:read"}},
			{"outsider", "pii", "globex", nil, []string{"executions:read"}},
		} {
			name, pw, cl, org, roles, perms := u.name, ontoPassword, u.clearance, u.org, u.roles, u.perms
			created, err := us.Create(ctx, users.Spec{Username: &name, Password: &pw, Clearance: &cl, Organization: &org, Roles: &roles, Permissions: &perms})
			if err != nil {
				t.Fatal(err)
			}
			ids[name] = created.ID
		}
		ks := kinds.Registry()
		store := ontology.NewStore(db, levels, ks.Domain())
		eng := engine.New(engine.Deps{DB: db, Ontology: store, Kinds: ks, Levels: levels})
		srv := api.New(api.Deps{Users: us, Auth: auth.NewService(db, auth.Options{}), Levels: levels,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Routes: []func(*gin.RouterGroup){api.OntologyRoutes(store), api.ActionRoutes(api.ActionDeps{Store: store, Inbox: notifications.NewInbox(db),
				Executions: executions.New(db, store, eng, nil, executions.Options{})})}})
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		e := &ontoEnv{t: t, url: ts.URL + "/api/v1/ontology", ids: ids}

		e.expect(201, "", "admin", "POST", "/types", `{"name":"Emp","properties":[{"name":"salary","type":"integer"}]}`)
		obj := func(marking, org string) string {
			return e.expect(201, "", "admin", "POST", "/types/Emp/objects", fmt.Sprintf(`{"properties":{"salary":1},"marking":%q,"organization":%q}`, marking, org)).str("id")
		}
		pub, pii, globex := obj("public", "acme"), obj("pii", "acme"), obj("public", "globex")
		gone := "0badc0de-0000-4000-8000-00000000dead"

		at := "00000000-0000-4000-8000-0000000000a7"
		n := 0
		row := func(kind, actor, target string, edits []models.Edit, batch *string) string {
			n++
			ex := models.Execution{ID: uuid.NewString(), Kind: kind, WorkflowID: "wf", ActionTypeID: at, ActionTypeName: "raise",
				ActorID: ids[actor], ActorName: actor, TargetObjectID: target, BatchID: batch,
				Parameters: models.NewNumJSON(map[string]any{"salary": 987654}), Justification: "secret-justification",
				Edits: models.NewNumJSON(edits), Status: models.StatusSucceeded, CreatedAt: time.Now().Add(time.Duration(n) * time.Second)}
			if err := db.Create(&ex).Error; err != nil {
				t.Fatal(err)
			}
			return ex.ID
		}
		upd := func(id string) []models.Edit {
			return []models.Edit{{Op: "update_object", ObjectID: id, Before: map[string]any{"salary": 1}, After: map[string]any{"salary": 987654}}}
		}
		hiddenBatch, openBatch := uuid.NewString(), uuid.NewString()
		full := map[string]bool{ // for the auditor (public, acme)
			row(models.KindExecute, "writer", pub, upd(pub), nil):                                                                                    true,
			row(models.KindExecute, "writer", pii, upd(pii), nil):                                                                                    false,
			row(models.KindExecute, "outsider", globex, upd(globex), nil):                                                                            false,
			row(models.KindExecute, "writer", "", []models.Edit{{Op: "create_object", ObjectID: pii, After: map[string]any{"salary": 987654}}}, nil): false,
			row(models.KindExecute, "writer", "", []models.Edit{{Op: "create_link", SourceID: pub, TargetID: pii}}, nil):                             false,
			row(models.KindExecute, "writer", gone, nil, nil):                                                                                        false,
			row(models.KindExecute, "auditor", gone, nil, nil):                                                                                       true,
			row(models.KindBatchItem, "writer", pub, upd(pub), &hiddenBatch):                                                                         true,
			row(models.KindBatchItem, "writer", pii, upd(pii), &hiddenBatch):                                                                         false,
			row(models.KindBatchItem, "writer", pub, upd(pub), &openBatch):                                                                           true,
		}
		for id, hidden := range map[string]bool{hiddenBatch: true, openBatch: false} {
			ex := models.Execution{ID: id, Kind: models.KindBatch, WorkflowID: "wf", ActionTypeID: at, ActionTypeName: "raise",
				ActorID: ids["writer"], ActorName: "writer", Parameters: models.NewNumJSON(map[string]any{"salary": 987654}),
				Justification: "secret-justification", Status: models.StatusSucceeded, TotalItems: 2, CreatedAt: time.Now()}
			if err := db.Create(&ex).Error; err != nil {
				t.Fatal(err)
			}
			full[id] = !hidden
		}

		check := func(who string, x map[string]any, wantFull bool) {
			t.Helper()
			b, _ := json.Marshal(x)
			leaked := strings.Contains(string(b), "987654") || strings.Contains(string(b), "secret-justification")
			red, _ := x["redacted"].(bool)
			if wantFull && (red || !strings.Contains(string(b), "987654")) {
				t.Errorf("%s: execution %s redacted, want it whole: %s", who, x["id"], b)
			}
			if !wantFull && (leaked || !red || x["target_object_id"] != nil) {
				t.Errorf("%s: execution %s shows object data it may not read: %s", who, x["id"], b)
			}
		}
		// The list, page by page: every row exactly once, each as it should be.
		seen := map[string]bool{}
		token := ""
		for page := 0; page < 20; page++ {
			r := e.expect(200, "", "auditor", "GET", "/executions?page_size=3&page_token="+url.QueryEscape(token), "")
			for _, d := range r.data() {
				x := d.(map[string]any)
				id := x["id"].(string)
				if seen[id] {
					t.Errorf("execution %s on two pages", id)
				}
				seen[id] = true
				check("auditor list", x, full[id])
			}
			if token = r.str("next_page_token"); token == "" {
				break
			}
		}
		if len(seen) != len(full) {
			t.Errorf("auditor paged through %d executions, want all %d", len(seen), len(full))
		}
		for id, want := range full {
			check("auditor get", e.expect(200, "", "auditor", "GET", "/executions/"+id, "").body, want)
			check("admin get", e.expect(200, "", "admin", "GET", "/executions/"+id, "").body, true)
		}
		// Another organization's auditor, whatever its clearance, sees only
		// its own organization's objects.
		for _, d := range e.expect(200, "", "outsider", "GET", "/executions?page_size=100", "").data() {
			x := d.(map[string]any)
			check("outsider list", x, x["id"] != nil && x["target_object_id"] == globex)
		}
		// A writer without executions:read reads its own, whole where it
		// may read the objects.
		for _, d := range e.expect(200, "", "writer", "GET", "/executions?page_size=100&target="+pii, "").data() {
			check("writer own", d.(map[string]any), true)
		}
	})
}

// Webhook header values are secrets: a guest session sees them redacted,
// whatever its user's permissions, and may not create, change or delete
// an action type (a new URL would carry the stored credentials away).
func TestGuestSessionManagesNoSecrets(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		base := strings.TrimSuffix(e.url, "/ontology")
		const secret = "Bearer s3cr3t-hook-token"
		id := e.expect(201, "", "writer", "POST", "/actions", `{"name":"notify_crm","operation_kind":"invoke_webhook",
			"config":{"operation":{"method":"POST","url":"https://hooks.example.com/crm","headers":{"Authorization":"`+secret+`"}}}}`).str("id")
		for _, user := range []string{"writer", "admin"} {
			req, _ := http.NewRequest("POST", base+"/auth/tokens", strings.NewReader(`{"guest":true}`))
			req.SetBasicAuth(user, ontoPassword)
			req.Header.Set("Content-Type", "application/json")
			r := send(t, req)
			var issued tokenInfo
			if err := json.Unmarshal(r.body, &issued); err != nil || r.status != 201 {
				t.Fatalf("issue a guest token for %s: %d %s", user, r.status, r.body)
			}
			tok := issued.Token
			call := func(method, path, body string) (int, string) {
				req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return res.StatusCode, string(b)
			}
			for _, path := range []string{"/ontology/actions/" + id, "/ontology/actions"} {
				if st, b := call("GET", path, ""); st != 200 || strings.Contains(b, "s3cr3t") || !strings.Contains(b, ontology.RedactedValue) {
					t.Errorf("%s's guest session GET %s: %d %s, want the header value redacted", user, path, st, b)
				}
			}
			for _, c := range []struct{ method, path, body string }{
				{"PATCH", "/ontology/actions/" + id, `{"config":{"operation":{"method":"POST","url":"https://attacker.example.com/"}}}`},
				{"PUT", "/ontology/actions/" + id, `{"name":"notify_crm","operation_kind":"invoke_webhook","config":{"operation":{"method":"POST","url":"https://attacker.example.com/"}}}`},
				{"POST", "/ontology/actions", `{"name":"other","operation_kind":"invoke_webhook","config":{"operation":{"method":"POST","url":"https://x.example.com/","headers":{"A":"b"}}}}`},
				{"DELETE", "/ontology/actions/" + id, ""},
			} {
				if st, b := call(c.method, c.path, c.body); st != 403 || !strings.Contains(b, "guest_session") {
					t.Errorf("%s's guest session %s %s: %d %s, want 403 guest_session", user, c.method, c.path, st, b)
				}
			}
		}
		r := e.expect(200, "", "writer", "GET", "/actions/"+id, "")
		if !strings.Contains(r.raw, secret) || !strings.Contains(r.raw, "hooks.example.com") {
			t.Fatalf("the action type changed: %s", r.raw)
		}
	})
}
