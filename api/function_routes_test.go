package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/engine/kinds/invokefunction"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/users"
)

// fnFoundation is a server with the /functions routes over a real
// functions service and ontology store.
type fnFoundation struct {
	*foundation
	svc   *functions.Service
	store *ontology.Store
}

func newFunctionFoundation(t *testing.T, db *gorm.DB) *fnFoundation {
	t.Helper()
	kinds := kinds.Registry()
	store := ontology.NewStore(db, auth.DefaultLevels, kinds.Domain())
	svc := functions.New(db, functions.Options{TestHost: invokefunction.TestHost})
	f := &fnFoundation{foundation: &foundation{db: db}, svc: svc, store: store}
	s := api.New(api.Deps{Users: &users.Store{DB: db, Levels: auth.DefaultLevels}, Auth: auth.NewService(db, auth.Options{}), Levels: auth.DefaultLevels,
		MaxBodyBytes: 1 << 20, Ready: func(context.Context) error { return nil },
		Routes: []func(g *gin.RouterGroup){api.FunctionRoutes(svc, store), api.OntologyRoutes(store)}})
	f.srv = httptest.NewServer(s.Handler())
	t.Cleanup(f.srv.Close)
	st := &users.Store{DB: db, Levels: auth.DefaultLevels}
	for _, u := range []struct {
		name, clearance string
		roles, perms    []string
	}{{"admin", "public", []string{"admin"}, nil}, {"plain", "public", nil, nil},
		{"alice", "pii", nil, []string{functions.PermRead, functions.PermWrite}},
		{"bob", "public", nil, []string{functions.PermRead}}} {
		name, pw, roles, perms, cl := u.name, u.name+"-password", u.roles, u.perms, u.clearance
		if _, err := st.Create(context.Background(), users.Spec{Username: &name, Password: &pw, Roles: &roles,
			Permissions: &perms, Clearance: &cl}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// A guest session cannot write function packages (their code runs with
// every actor's reads and, with network, calls out): creating a package,
// publishing, deleting and test-running a version are 403 guest_session, even for an
// admin; the admin's full token can.
func TestGuestSessionCannotWriteFunctions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFunctionFoundation(t, db)
		if r := f.json(t, "admin", "POST", "/api/v1/functions", `{"name":"kept","runtime":"javascript"}`); r.status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		if r := f.json(t, "admin", "POST", "/api/v1/functions/kept/versions", `{"version":"1.0.0","source":"export default () => 1"}`); r.status != http.StatusCreated {
			t.Fatalf("publish: %d %s", r.status, r.body)
		}
		guest, _ := f.issue(t, "admin", `{"guest":true}`)
		full, _ := f.issue(t, "admin", `{}`)
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/api/v1/functions", `{"name":"evil","runtime":"javascript"}`},
			{"POST", "/api/v1/functions/kept/versions", `{"version":"1.0.1","source":"export default () => 2"}`},
			{"DELETE", "/api/v1/functions/kept/versions/1.0.0", ""},
			{"POST", "/api/v1/functions/kept/versions/1.0.0/test", `{}`},
		} {
			r := f.bearer(t, guest, c.method, c.path, c.body)
			if r.status != http.StatusForbidden || r.code() != "PermissionDenied" || !strings.Contains(string(r.body), "guest_session") {
				t.Errorf("guest %s %s: %d %s, want 403 guest_session", c.method, c.path, r.status, r.body)
			}
		}
		if r := f.json(t, "admin", "GET", "/api/v1/functions/kept/versions/1.0.0", ""); r.status != http.StatusOK {
			t.Errorf("a guest session deleted a version: %d", r.status)
		}
		if r := f.json(t, "admin", "GET", "/api/v1/functions/evil", ""); r.status != http.StatusNotFound {
			t.Errorf("a guest session created a package: %d", r.status)
		}
		if r := f.bearer(t, full, "POST", "/api/v1/functions", `{"name":"evil","runtime":"javascript"}`); r.status != http.StatusCreated {
			t.Errorf("a full token creating a package: %d %s", r.status, r.body)
		}
	})
}

// A test run reads through the same host as an action's run: query
// without a limit answers up to 100 objects (the test host answered 1).
func TestFunctionTestRunQueryDefault(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFunctionFoundation(t, db)
		ctx := context.Background()
		if _, err := f.store.CreateObjectType(ctx, "", ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}}}); err != nil {
			t.Fatal(err)
		}
		for _, title := range []string{"a", "b", "c"} {
			if r := f.json(t, "admin", "POST", "/api/v1/ontology/types/Ticket/objects", `{"properties":{"title":"`+title+`"}}`); r.status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
		}
		f.publish(t, "counter", `export default (ctx) => ({ result: ctx.ontology.query("Ticket", {}).length })`)
		r := f.json(t, "admin", "POST", "/api/v1/functions/counter/versions/1.0.0/test", `{}`)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"value":{"result":3}`) {
			t.Fatalf("test run: %d %s, want value 3", r.status, r.body)
		}
	})
}

// publish creates package name with version 1.0.0 of src, as admin.
func (f *fnFoundation) publish(t *testing.T, name, src string) {
	t.Helper()
	if r := f.json(t, "admin", "POST", "/api/v1/functions", `{"name":"`+name+`","runtime":"javascript"}`); r.status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", name, r.status, r.body)
	}
	body, _ := json.Marshal(map[string]string{"version": "1.0.0", "source": src})
	if r := f.json(t, "admin", "POST", "/api/v1/functions/"+name+"/versions", string(body)); r.status != http.StatusCreated {
		t.Fatalf("publish %s: %d %s", name, r.status, r.body)
	}
}

// Run records follow the read rule (issue: /runs and /metrics showed
// every run's console, error and target to anyone with functions:read):
// a run is shown whole to its actor, and to another caller only when it
// may read the target and every object the run read; otherwise it is
// redacted (console, error and target blanked, "redacted": true).
func TestFunctionRunsRedacted(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFunctionFoundation(t, db)
		if _, err := f.store.CreateObjectType(context.Background(), "", ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}}}); err != nil {
			t.Fatal(err)
		}
		object := func(title, marking string) string {
			r := f.json(t, "admin", "POST", "/api/v1/ontology/types/Ticket/objects", `{"properties":{"title":"`+title+`"},"marking":"`+marking+`"}`)
			var o struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(r.body, &o); err != nil || r.status != http.StatusCreated {
				t.Fatalf("create %s: %d %s", title, r.status, r.body)
			}
			return o.ID
		}
		hidden, open := object("classified-title", "pii"), object("open-title", "public")
		f.publish(t, "leaky", `export default (ctx) => {
  const p = ctx.parameters || {};
  console.log("target", ctx.target.properties.title);
  if (p.other) console.log("other", ctx.ontology.get(p.other).properties.title);
  if (p.fail) throw new Error("boom " + ctx.target.properties.title);
  return 1;
}`)
		for _, in := range []map[string]any{
			{"target_object_id": hidden},
			{"target_object_id": open, "parameters": map[string]any{"other": hidden}},
			{"target_object_id": hidden, "parameters": map[string]any{"fail": true}},
			{"target_object_id": open},
		} {
			body, _ := json.Marshal(in)
			if r := f.json(t, "alice", "POST", "/api/v1/functions/leaky/versions/1.0.0/test", string(body)); r.status != http.StatusOK {
				t.Fatalf("alice's test run %s: %d %s", body, r.status, r.body)
			}
		}
		type run struct {
			Target   string `json:"target_object_id"`
			Console  string `json:"console"`
			Error    string `json:"error"`
			Redacted bool   `json:"redacted"`
		}
		runs := func(user string) []run {
			r := f.json(t, user, "GET", "/api/v1/functions/leaky/runs", "")
			var page struct {
				Items []run `json:"data"`
			}
			if err := json.Unmarshal(r.body, &page); err != nil || r.status != http.StatusOK || len(page.Items) != 4 {
				t.Fatalf("%s's runs: %d %s", user, r.status, r.body)
			}
			return page.Items
		}
		for _, user := range []string{"alice", "admin"} {
			for _, r := range runs(user) {
				if r.Redacted || r.Target == "" || r.Console == "" {
					t.Errorf("%s sees a run redacted: %+v", user, r)
				}
			}
		}
		whole := 0
		for _, r := range runs("bob") {
			if r.Redacted {
				if r.Console != "" || r.Error != "" || r.Target != "" {
					t.Errorf("bob's redacted run keeps data: %+v", r)
				}
				continue
			}
			whole++
			if r.Target != open || strings.Contains(r.Console, "classified") {
				t.Errorf("bob sees a run that read what he may not: %+v", r)
			}
		}
		if whole != 1 {
			t.Errorf("bob sees %d runs whole, want 1 (the one that read only the open ticket)", whole)
		}
		for _, user := range []string{"bob", "alice"} {
			r := f.json(t, user, "GET", "/api/v1/functions/leaky/metrics", "")
			if r.status != http.StatusOK || strings.Contains(string(r.body), "classified") != (user == "alice") ||
				strings.Contains(string(r.body), hidden) != (user == "alice") {
				t.Errorf("%s's metrics: %d %s", user, r.status, r.body)
			}
		}
	})
}

// ctx.ontology.aggregate answers the REST aggregation through the run's
// host (a test run here), and a request the route would refuse throws
// the route's message into the function.
func TestFunctionAggregate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFunctionFoundation(t, db)
		ctx := context.Background()
		if _, err := f.store.CreateObjectType(ctx, "", ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}}}); err != nil {
			t.Fatal(err)
		}
		for _, title := range []string{"a", "b", "b"} {
			if r := f.json(t, "admin", "POST", "/api/v1/ontology/types/Ticket/objects", `{"properties":{"title":"`+title+`"}}`); r.status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
		}
		f.publish(t, "facets", `export default (ctx) => {
  const a = ctx.ontology.aggregate("Ticket", { group_by: [{ property: "title" }], order: { by: "count", direction: "desc" } });
  let bad = "";
  try { ctx.ontology.aggregate("Ticket", { metrics: [{ type: "sum", property: "title" }] }); } catch (e) { bad = String(e); }
  return { result: { top: a.groups[0].key[0].value, n: a.groups[0].metrics.count, groups: a.groups.length, accuracy: a.accuracy, bad: bad } };
}`)
		r := f.json(t, "admin", "POST", "/api/v1/functions/facets/versions/1.0.0/test", `{}`)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"top":"b","n":2,"groups":2,"accuracy":"accurate"`) ||
			!strings.Contains(string(r.body), "does not apply to title") {
			t.Fatalf("test run: %d %s", r.status, r.body)
		}
	})
}
