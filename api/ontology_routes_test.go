package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/users"
)

const ontoPassword = "correct-horse-1"

// ontoEnv is a real HTTP server with the ontology routes and five users:
// admin (admin role), writer (ontology:write, pii, acme), reader (no
// permission, public clearance, acme), outsider (ontology:*, pii, globex)
// and clerk (ontology:write, confidential, acme).
type ontoEnv struct {
	t   *testing.T
	url string
	ids map[string]string
}

func newOntoEnv(t *testing.T, db *gorm.DB) *ontoEnv {
	t.Helper()
	ctx := context.Background()
	levels := auth.DefaultLevels
	us := &users.Store{DB: db, Levels: levels}
	env := &ontoEnv{t: t, ids: map[string]string{}}
	for _, u := range []struct {
		name, clearance, org string
		roles, perms         []string
	}{
		{"admin", "pii", "", []string{"admin"}, nil},
		{"writer", "pii", "acme", nil, []string{"ontology:write"}},
		{"reader", "public", "acme", nil, nil},
		{"outsider", "pii", "globex", nil, []string{"ontology:*"}},
		{"clerk", "confidential", "acme", nil, []string{"ontology:write"}},
	} {
		name, pw, cl, org, roles, perms := u.name, ontoPassword, u.clearance, u.org, u.roles, u.perms
		created, err := us.Create(ctx, users.Spec{Username: &name, Password: &pw, Clearance: &cl, Organization: &org,
			Roles: &roles, Permissions: &perms})
		if err != nil {
			t.Fatalf("create user %s: %v", name, err)
		}
		env.ids[name] = created.ID
	}
	srv := api.New(api.Deps{
		Users: us, Auth: auth.NewService(db, auth.Options{}), Levels: levels,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Routes: []func(*gin.RouterGroup){api.OntologyRoutes(ontology.NewStore(db, levels, kinds.Registry().Domain()))},
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	env.url = ts.URL + "/api/v1/ontology"
	return env
}

// ontoResp is a decoded response.
type ontoResp struct {
	status int
	body   map[string]any
	raw    string
}

func (r ontoResp) code() string {
	if e, ok := r.body["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

func (r ontoResp) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

func (r ontoResp) data() []any {
	d, _ := r.body["data"].([]any)
	return d
}

// do sends body (raw JSON text; "" for none) as user ("" = anonymous).
func (e *ontoEnv) do(user, method, path, body string) ontoResp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, ontoPassword)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := ontoResp{status: res.StatusCode, raw: string(b)}
	if len(bytes.TrimSpace(b)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&r.body); err != nil {
			e.t.Fatalf("%s %s: response is not a JSON object: %s", method, path, b)
		}
	}
	return r
}

// expect sends a request and fails unless the status (and, for errors,
// the code) match.
func (e *ontoEnv) expect(status int, code, user, method, path, body string) ontoResp {
	e.t.Helper()
	r := e.do(user, method, path, body)
	if r.status != status || (code != "" && r.code() != code) {
		e.t.Fatalf("%s %s as %s: got %d %s, want %d %s", method, path, user, r.status, r.raw, status, code)
	}
	if r.status >= 400 && r.code() == "" {
		e.t.Fatalf("%s %s: error without the JSON error body: %s", method, path, r.raw)
	}
	return r
}

func TestOntologyRoutesObjectTypes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		r := e.expect(201, "", "writer", "POST", "/types", `{"name":"Employee","display_name":"Employee","primary_key":"name",
			"properties":[{"name":"name","type":"string"},{"name":"age","type":"integer"}]}`)
		id := r.str("id")
		if props, _ := r.body["properties"].([]any); len(props) != 2 || r.str("owner") != e.ids["writer"] {
			t.Fatalf("created object type: %s", r.raw)
		}
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Team","description":"A team of people"}`)

		e.expect(200, "", "reader", "GET", "/types/"+id, "")
		e.expect(200, "", "reader", "GET", "/types/Employee", "")
		e.expect(404, "ObjectTypeNotFound", "reader", "GET", "/types/Nope", "")
		e.expect(404, "ObjectTypeNotFound", "reader", "GET", "/types/aaaaaaaa-0000-4000-8000-000000000001", "")

		// Search and pagination.
		if d := e.expect(200, "", "reader", "GET", "/types?q=PEOPLE", "").data(); len(d) != 1 {
			t.Fatalf("search found %d types, want 1", len(d))
		}
		p1 := e.expect(200, "", "reader", "GET", "/types?page_size=1", "")
		tok := p1.str("next_page_token")
		if len(p1.data()) != 1 || tok == "" {
			t.Fatalf("first page: %s", p1.raw)
		}
		p2 := e.expect(200, "", "reader", "GET", "/types?page_size=1&page_token="+tok, "")
		if len(p2.data()) != 1 || p2.str("next_page_token") != "" {
			t.Fatalf("second page: %s", p2.raw)
		}
		e.expect(400, "InvalidArgument", "reader", "GET", "/types?page_size=0", "")

		// Bad input.
		e.expect(400, "InvalidJSON", "writer", "POST", "/types", `{"name":`)
		e.expect(400, "InvalidJSON", "writer", "POST", "/types", `{"name":"X","colour":"red"}`)
		e.expect(400, "InvalidJSON", "writer", "POST", "/types", `{"name":"X"} {}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "POST", "/types", `{"name":"1bad"}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "POST", "/types", `{"name":"abcdef01-0000-4000-8000-000000000001"}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "POST", "/types", `{"name":"X","primary_key":"nope"}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "POST", "/types", `{"name":"X","properties":[{"name":"a","type":"strin"}]}`)
		e.expect(409, "Conflict", "writer", "POST", "/types", `{"name":"Employee"}`)
		e.expect(401, "Unauthorized", "", "GET", "/types", "")
		e.expect(403, "PermissionDenied", "reader", "POST", "/types", `{"name":"Forbidden"}`)
		e.expect(403, "PermissionDenied", "reader", "DELETE", "/types/Team", "")

		// Updates.
		r = e.expect(200, "", "writer", "PATCH", "/types/Employee", `{"display_name":"Staff member","icon":"person"}`)
		if r.str("display_name") != "Staff member" || r.str("primary_key") != "name" || r.str("icon") != "person" {
			t.Fatalf("patched object type: %s", r.raw)
		}
		e.expect(400, "InvalidJSON", "writer", "PATCH", "/types/Employee", `{"nope":1}`)
		r = e.expect(200, "", "writer", "PUT", "/types/Team", `{"name":"Squad","description":"renamed"}`)
		if r.str("name") != "Squad" {
			t.Fatalf("renamed: %s", r.raw)
		}
		e.expect(409, "Conflict", "writer", "PUT", "/types/Squad", `{"name":"Employee"}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "PUT", "/types/Squad", `{"name":"Squad","properties":[{"name":"a","type":"string"}]}`)
		e.expect(404, "ObjectTypeNotFound", "writer", "PUT", "/types/Team", `{"name":"Team"}`)

		e.expect(204, "", "writer", "DELETE", "/types/Squad", "")
		e.expect(404, "ObjectTypeNotFound", "writer", "DELETE", "/types/Squad", "")
	})
}

func TestOntologyRoutesPropertiesAndObjects(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Employee","primary_key":"name",
			"properties":[{"name":"name","type":"string"},{"name":"age","type":"integer"},
			{"name":"tags","type":{"type":"array","element_type":"string"}},{"name":"email","type":"string","unique":true}]}`)

		// Properties.
		r := e.expect(201, "", "writer", "POST", "/types/Employee/properties", `{"name":"salary","type":"double","default_value":1000}`)
		if r.str("name") != "salary" {
			t.Fatalf("created property: %s", r.raw)
		}
		e.expect(409, "Conflict", "writer", "POST", "/types/Employee/properties", `{"name":"salary","type":"double"}`)
		r = e.expect(400, "InvalidOntologyDefinition", "writer", "POST", "/types/Employee/properties", `{"name":"x","type":"integer","default_value":"ten"}`)
		if !strings.Contains(r.raw, "default_value") {
			t.Fatalf("error does not name default_value: %s", r.raw)
		}
		e.expect(400, "InvalidJSON", "writer", "POST", "/types/Employee/properties", `{"name":"x","type":"string","requird":true}`)
		e.expect(200, "", "reader", "GET", "/types/Employee/properties/salary", "")
		e.expect(404, "PropertyNotFound", "reader", "GET", "/types/Employee/properties/nope", "")
		if d := e.expect(200, "", "reader", "GET", "/types/Employee/properties", "").data(); len(d) != 5 {
			t.Fatalf("listed %d properties, want 5", len(d))
		}
		r = e.expect(200, "", "writer", "PATCH", "/types/Employee/properties/salary", `{"display_name":"Salary (EUR)"}`)
		if r.str("display_name") != "Salary (EUR)" || r.str("type") != "" && !strings.Contains(r.raw, `"double"`) {
			t.Fatalf("patched property: %s", r.raw)
		}
		e.expect(400, "InvalidOntologyDefinition", "writer", "PUT", "/types/Employee/properties/salary", `{"name":"pay","type":"double"}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "PATCH", "/types/Employee/properties/name", `{"required":false}`)
		e.expect(403, "PermissionDenied", "reader", "PATCH", "/types/Employee/properties/salary", `{"display_name":"x"}`)

		// Objects.
		r = e.expect(201, "", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Ann","age":34,"tags":["a","b"],"email":"ann@x"}}`)
		ann := r.str("id")
		if r.str("marking") != "public" || r.str("organization") != "acme" || r.str("created_by") != e.ids["writer"] {
			t.Fatalf("created object: %s", r.raw)
		}
		if props, _ := r.body["properties"].(map[string]any); props["salary"] != json.Number("1000") {
			t.Fatalf("default not applied: %s", r.raw)
		}
		e.expect(201, "", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Bob","age":25,"tags":["b"]}}`)
		secret := e.expect(201, "", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Cyd","age":51},"marking":"pii"}`).str("id")
		r = e.expect(400, "InvalidPropertyValue", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Dee","age":"old","nope":1}}`)
		if !strings.Contains(r.raw, "properties.age") || !strings.Contains(r.raw, "properties.nope") {
			t.Fatalf("error does not name every offending property: %s", r.raw)
		}
		e.expect(400, "InvalidPropertyValue", "writer", "POST", "/types/Employee/objects", `{"properties":{"age":3}}`)
		e.expect(409, "UniquePropertyViolation", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Ann"}}`)
		e.expect(409, "UniquePropertyViolation", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Ann2","email":"ann@x"}}`)
		e.expect(400, "InvalidArgument", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Eve"},"marking":"secret"}`)
		e.expect(403, "PermissionDenied", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Eve"},"organization":"globex"}`)
		// An admin may name another organization, within its column's 128 characters.
		e.expect(400, "InvalidArgument", "admin", "POST", "/types/Employee/objects", `{"properties":{"name":"Eve"},"organization":"`+strings.Repeat("o", 129)+`"}`)
		e.expect(400, "InvalidArgument", "writer", "GET", "/types/%FF/objects", "")
		e.expect(403, "PermissionDenied", "reader", "POST", "/types/Employee/objects", `{"properties":{"name":"Eve"}}`)
		e.expect(400, "InvalidJSON", "writer", "POST", "/types/Employee/objects", `{"props":{}}`)
		e.expect(404, "ObjectTypeNotFound", "writer", "POST", "/types/Nope/objects", `{"properties":{}}`)

		// Read rules: clearance and organization, admins excepted.
		e.expect(200, "", "reader", "GET", "/types/Employee/objects/"+ann, "")
		e.expect(404, "ObjectNotFound", "reader", "GET", "/types/Employee/objects/"+secret, "")
		e.expect(200, "", "writer", "GET", "/types/Employee/objects/"+secret, "")
		e.expect(404, "ObjectNotFound", "outsider", "GET", "/types/Employee/objects/"+ann, "")
		e.expect(200, "", "admin", "GET", "/types/Employee/objects/"+secret, "")
		e.expect(404, "ObjectNotFound", "reader", "GET", "/types/Employee/objects/not-a-uuid", "")
		if d := e.expect(200, "", "reader", "GET", "/types/Employee/objects", "").data(); len(d) != 2 {
			t.Fatalf("reader lists %d objects, want 2 (pii hidden)", len(d))
		}
		if d := e.expect(200, "", "outsider", "GET", "/types/Employee/objects", "").data(); len(d) != 0 {
			t.Fatalf("another organization lists %d objects, want 0", len(d))
		}
		if d := e.expect(200, "", "admin", "GET", "/types/Employee/objects", "").data(); len(d) != 3 {
			t.Fatalf("admin lists %d objects, want 3", len(d))
		}

		// Filters.
		for _, c := range []struct {
			query string
			want  int
		}{
			{"filter.name=Ann", 1},
			{"filter.age.greater_than=30", 2},
			{"filter.age.less_than_or_equals=34", 2},
			{"filter.age.greater_than=30&filter.age.less_than=40", 1},
			{"filter.tags.includes=b", 2},
			{"filter.email.exists=true", 1},
			{"filter.email.not_exists=", 2},
			{"filter.name.is_not=Ann", 2},
			{"filter.name.includes=y", 1},
		} {
			d := e.expect(200, "", "writer", "GET", "/types/Employee/objects?"+c.query, "").data()
			if len(d) != c.want {
				t.Errorf("%s: %d objects, want %d", c.query, len(d), c.want)
			}
		}
		pg := e.expect(200, "", "writer", "GET", "/types/Employee/objects?filter.age.greater_than=1&page_size=2", "")
		if len(pg.data()) != 2 || pg.str("next_page_token") == "" {
			t.Fatalf("filtered first page: %s", pg.raw)
		}
		if d := e.expect(200, "", "writer", "GET", "/types/Employee/objects?filter.age.greater_than=1&page_size=2&page_token="+url.QueryEscape(pg.str("next_page_token")), "").data(); len(d) != 1 {
			t.Fatalf("filtered second page has %d objects, want 1", len(d))
		}
		e.expect(400, "InvalidArgument", "writer", "GET", "/types/Employee/objects?filter.nope=1", "")
		e.expect(400, "InvalidArgument", "writer", "GET", "/types/Employee/objects?filter.age=old", "")
		e.expect(400, "InvalidArgument", "writer", "GET", "/types/Employee/objects?filter.age.matches=1", "")
		e.expect(400, "InvalidArgument", "writer", "GET", "/types/Employee/objects?filter.age.includes=1", "")

		// Orderings, walked a page at a time by keyset tokens: objects
		// without a value (email) last ascending, first descending.
		names := func(query string) string {
			var out []string
			tok := ""
			for i := 0; i < 10; i++ {
				pg := e.expect(200, "", "writer", "GET", "/types/Employee/objects?page_size=1&"+query+"&page_token="+url.QueryEscape(tok), "")
				for _, d := range pg.data() {
					out = append(out, d.(map[string]any)["properties"].(map[string]any)["name"].(string))
				}
				if tok = pg.str("next_page_token"); tok == "" {
					break
				}
			}
			return strings.Join(out, ",")
		}
		for q, want := range map[string]string{"order_by=age": "Bob,Ann,Cyd", "order_by=-age": "Cyd,Ann,Bob",
			"order_by=email": "Ann,Bob,Cyd", "order_by=-email": "Cyd,Bob,Ann", "order_by=-created_at": "Cyd,Bob,Ann",
			"order_by=updated_at": "Ann,Bob,Cyd", "order_by=-name&filter.age.less_than=50": "Bob,Ann"} {
			if got := names(q); got != want {
				t.Errorf("%s: %s, want %s", q, got, want)
			}
		}
		for _, q := range []string{"order_by=nope", "order_by=tags", "order_by=-", "order_by=--age"} {
			r := e.expect(400, "InvalidArgument", "writer", "GET", "/types/Employee/objects?"+q, "")
			if !strings.Contains(r.raw, `"field":"order_by"`) {
				t.Errorf("%s: the error does not name order_by: %s", q, r.raw)
			}
		}
		tok := e.expect(200, "", "writer", "GET", "/types/Employee/objects?page_size=1&order_by=age", "").str("next_page_token")
		r = e.expect(400, "InvalidArgument", "writer", "GET", "/types/Employee/objects?order_by=-age&page_token="+url.QueryEscape(tok), "")
		if !strings.Contains(r.raw, `"field":"page_token"`) || !strings.Contains(r.raw, "order_by=age") {
			t.Errorf("a token of another order: %s", r.raw)
		}
		// A token of the offset pages before keyset pages still works.
		old := base64.RawURLEncoding.EncodeToString([]byte("2"))
		if d := e.expect(200, "", "writer", "GET", "/types/Employee/objects?page_token="+old, "").data(); len(d) != 1 {
			t.Errorf("an offset token: %d objects, want 1", len(d))
		}

		// Merge, replace, delete.
		r = e.expect(200, "", "writer", "PATCH", "/types/Employee/objects/"+ann, `{"properties":{"age":35,"tags":null}}`)
		if props, _ := r.body["properties"].(map[string]any); props["age"] != json.Number("35") || props["tags"] != nil || props["email"] != "ann@x" {
			t.Fatalf("merge patch: %s", r.raw)
		}
		r = e.expect(200, "", "writer", "PATCH", "/types/Employee/objects/"+ann, `{"mode":"replace","properties":{"name":"Ann","salary":5}}`)
		if props, _ := r.body["properties"].(map[string]any); len(props) != 2 {
			t.Fatalf("replace patch left %v", props)
		}
		// The replaced email is free again.
		e.expect(201, "", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Fay","email":"ann@x"}}`)
		e.expect(400, "InvalidPropertyValue", "writer", "PUT", "/types/Employee/objects/"+ann, `{"properties":{"age":1}}`)
		e.expect(200, "", "writer", "PUT", "/types/Employee/objects/"+ann, `{"properties":{"name":"Ann"},"marking":"confidential"}`)
		e.expect(404, "ObjectNotFound", "reader", "GET", "/types/Employee/objects/"+ann, "")
		e.expect(400, "InvalidArgument", "writer", "PATCH", "/types/Employee/objects/"+ann, `{"mode":"upsert","properties":{}}`)
		e.expect(409, "UniquePropertyViolation", "writer", "PATCH", "/types/Employee/objects/"+ann, `{"properties":{"name":"Bob"}}`)
		e.expect(403, "PermissionDenied", "reader", "PATCH", "/types/Employee/objects/"+ann, `{"properties":{"age":1}}`)
		e.expect(404, "ObjectNotFound", "outsider", "DELETE", "/types/Employee/objects/"+ann, "")
		e.expect(204, "", "writer", "DELETE", "/types/Employee/objects/"+ann, "")
		e.expect(404, "ObjectNotFound", "writer", "GET", "/types/Employee/objects/"+ann, "")

		// Deleting a property removes its values; deleting a type with
		// objects is refused naming them.
		e.expect(204, "", "writer", "DELETE", "/types/Employee/properties/tags", "")
		r = e.expect(409, "DependentsExist", "writer", "DELETE", "/types/Employee", "")
		if !strings.Contains(r.raw, "object(s)") {
			t.Fatalf("409 does not name the objects: %s", r.raw)
		}
		r = e.expect(409, "DependentsExist", "writer", "DELETE", "/types/Employee/properties/name", "")
		if !strings.Contains(r.raw, "primary key") {
			t.Fatalf("409 does not name the primary key: %s", r.raw)
		}
	})
}

func TestOntologyRoutesLinks(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Employee","properties":[{"name":"name","type":"string"}]}`)
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Team","properties":[{"name":"title","type":"string"}]}`)
		lt := e.expect(201, "", "writer", "POST", "/link-types", `{"name":"member_of","source_object_type_id":"Employee","target_object_type_id":"Team","cardinality":"many_to_one"}`)
		ltID := lt.str("id")
		e.expect(400, "InvalidOntologyDefinition", "writer", "POST", "/link-types", `{"name":"x","source_object_type_id":"Employee","target_object_type_id":"Team","cardinality":"some"}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "POST", "/link-types", `{"name":"x","source_object_type_id":"Nope","target_object_type_id":"Team","cardinality":"one_to_one"}`)
		e.expect(409, "Conflict", "writer", "POST", "/link-types", `{"name":"member_of","source_object_type_id":"Employee","target_object_type_id":"Team","cardinality":"one_to_one"}`)
		e.expect(403, "PermissionDenied", "reader", "POST", "/link-types", `{"name":"y","source_object_type_id":"Employee","target_object_type_id":"Team","cardinality":"one_to_one"}`)
		e.expect(200, "", "reader", "GET", "/link-types/member_of", "")
		// PUT replaces the definition: malformed, incomplete, unknown or forbidden.
		e.expect(400, "InvalidJSON", "writer", "PUT", "/link-types/"+ltID, `{"name":`)
		e.expect(400, "InvalidJSON", "writer", "PUT", "/link-types/"+ltID, `{"name":"member_of","cardinality":7}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "PUT", "/link-types/"+ltID, `{"name":"member_of","source_object_type_id":"Employee","target_object_type_id":"Team","cardinality":"some"}`)
		e.expect(404, "LinkTypeNotFound", "writer", "PUT", "/link-types/nope", `{"name":"nope","source_object_type_id":"Employee","target_object_type_id":"Team","cardinality":"one_to_one"}`)
		e.expect(403, "PermissionDenied", "reader", "PUT", "/link-types/"+ltID, `{"name":"member_of","source_object_type_id":"Employee","target_object_type_id":"Team","cardinality":"many_to_one"}`)
		e.expect(404, "LinkTypeNotFound", "reader", "GET", "/link-types/nope", "")
		if d := e.expect(200, "", "reader", "GET", "/link-types?object_type=Team", "").data(); len(d) != 1 {
			t.Fatalf("link types of Team: %d", len(d))
		}

		obj := func(typ, props string) string {
			return e.expect(201, "", "writer", "POST", "/types/"+typ+"/objects", `{"properties":`+props+`}`).str("id")
		}
		ann, bob := obj("Employee", `{"name":"Ann"}`), obj("Employee", `{"name":"Bob"}`)
		core, edge := obj("Team", `{"title":"Core"}`), obj("Team", `{"title":"Edge"}`)
		link := func(src, dst string) string {
			return fmt.Sprintf(`{"source_object_id":%q,"target_object_id":%q}`, src, dst)
		}
		l1 := e.expect(201, "", "writer", "POST", "/link-types/member_of/links", link(ann, core)).str("id")
		e.expect(201, "", "writer", "POST", "/link-types/"+ltID+"/links", link(bob, core))
		r := e.expect(409, "LinkCardinalityViolation", "writer", "POST", "/link-types/member_of/links", link(ann, edge))
		if strings.Contains(r.raw, l1) || strings.Contains(r.raw, core) {
			t.Fatalf("cardinality error names the existing link or its other end: %s", r.raw)
		}
		e.expect(409, "Conflict", "writer", "POST", "/link-types/member_of/links", link(ann, core))
		e.expect(400, "InvalidArgument", "writer", "POST", "/link-types/member_of/links", link(core, ann))
		e.expect(404, "ObjectNotFound", "writer", "POST", "/link-types/member_of/links", link(ann, "aaaaaaaa-0000-4000-8000-000000000001"))
		e.expect(400, "InvalidArgument", "writer", "POST", "/link-types/member_of/links", `{"source_object_id":"`+ann+`"}`)
		e.expect(400, "InvalidJSON", "writer", "POST", "/link-types/member_of/links", `{"source":"x"}`)

		if d := e.expect(200, "", "reader", "GET", "/types/Team/objects/"+core+"/links", "").data(); len(d) != 2 {
			t.Fatalf("links of core: %d, want 2", len(d))
		}
		if d := e.expect(200, "", "reader", "GET", "/types/Team/objects/"+core+"/links?direction=outgoing", "").data(); len(d) != 0 {
			t.Fatalf("outgoing links of core: %d, want 0", len(d))
		}
		if d := e.expect(200, "", "reader", "GET", "/types/Employee/objects/"+ann+"/links?link_type=member_of&direction=outgoing", "").data(); len(d) != 1 {
			t.Fatalf("outgoing links of ann: %d, want 1", len(d))
		}
		e.expect(400, "InvalidArgument", "reader", "GET", "/types/Employee/objects/"+ann+"/links?direction=up", "")
		if d := e.expect(200, "", "reader", "GET", "/link-types/member_of/links", "").data(); len(d) != 2 {
			t.Fatalf("links of member_of: %d, want 2", len(d))
		}
		if d := e.expect(200, "", "outsider", "GET", "/link-types/member_of/links", "").data(); len(d) != 0 {
			t.Fatalf("another organization sees %d links", len(d))
		}
		e.expect(200, "", "reader", "GET", "/links/"+l1, "")
		e.expect(404, "LinkNotFound", "outsider", "GET", "/links/"+l1, "")

		// Cardinality and ends are fixed while links exist.
		e.expect(409, "Conflict", "writer", "PATCH", "/link-types/member_of", `{"cardinality":"one_to_one"}`)
		e.expect(200, "", "writer", "PATCH", "/link-types/member_of", `{"display_name":"Member of"}`)

		e.expect(403, "PermissionDenied", "reader", "DELETE", "/links/"+l1, "")
		e.expect(204, "", "writer", "DELETE", "/links/"+l1, "")
		e.expect(404, "LinkNotFound", "writer", "DELETE", "/links/"+l1, "")
		e.expect(201, "", "writer", "POST", "/link-types/member_of/links", link(ann, edge))

		r = e.expect(409, "DependentsExist", "writer", "DELETE", "/types/Team", "")
		if !strings.Contains(r.raw, "link type member_of") {
			t.Fatalf("409 does not name the link type: %s", r.raw)
		}
		e.expect(204, "", "writer", "DELETE", "/link-types/member_of", "")
		if d := e.expect(200, "", "reader", "GET", "/types/Employee/objects/"+ann+"/links", "").data(); len(d) != 0 {
			t.Fatalf("links survived their link type: %d", len(d))
		}
	})
}

func TestOntologyRoutesActionTypes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		typeID := e.expect(201, "", "writer", "POST", "/types", `{"name":"Ticket","properties":[{"name":"status","type":"string"},{"name":"priority","type":"integer"}]}`).str("id")
		def := `{"name":"set_status","display_name":"Set status","object_type_id":"Ticket","operation_kind":"update_object",
			"inputs":[{"name":"status","type":"string","required":true}],
			"form_schema":{"parameter_overrides":[{"parameter":"status","conditions":[{"path":"target.properties.priority","operator":"greater_than","value":3}],"required":true}]},
			"config":{"operation":{"property_mappings":[{"property":"status","input":"status"}]},
				"notification_side_effects":[{"title":"Status is {{ parameters.status }}","send_to_actor":true}]},
			"policy":{"permission_key":"tickets:edit","minimum_clearance":"confidential"}}`
		r := e.expect(201, "", "writer", "POST", "/actions", def)
		id := r.str("id")
		if r.body["version"] != json.Number("1") || r.str("object_type_id") != typeID || r.str("owner") != e.ids["writer"] {
			t.Fatalf("created action type: %s", r.raw)
		}
		e.expect(409, "Conflict", "writer", "POST", "/actions", def)
		e.expect(403, "PermissionDenied", "reader", "POST", "/actions", strings.Replace(def, "set_status", "other", 1))
		r = e.expect(400, "InvalidActionTypeDefinition", "writer", "POST", "/actions", strings.Replace(strings.Replace(def, "set_status", "bad", 1), `"input":"status"`, `"input":"state"`, 1))
		if !strings.Contains(r.raw, "config.operation.property_mappings[0].input") {
			t.Fatalf("definition error does not name the member: %s", r.raw)
		}
		e.expect(400, "InvalidJSON", "writer", "POST", "/actions", `{"name":"x","operation_kind":"update_object","inputz":[]}`)
		e.expect(400, "InvalidJSON", "writer", "POST", "/actions", `[`)
		e.expect(400, "InvalidJSON", "writer", "PUT", "/actions/"+id, `[`)
		e.expect(400, "InvalidJSON", "writer", "PUT", "/actions/"+id, `{"name":"set_status","operation_kind":7}`)
		e.expect(404, "ActionTypeNotFound", "writer", "PUT", "/actions/nope", def)
		e.expect(403, "PermissionDenied", "reader", "PUT", "/actions/"+id, def)

		e.expect(200, "", "reader", "GET", "/actions/"+id, "")
		e.expect(200, "", "reader", "GET", "/actions/set_status", "")
		e.expect(404, "ActionTypeNotFound", "reader", "GET", "/actions/nope", "")
		if d := e.expect(200, "", "reader", "GET", "/actions?object_type_id="+typeID+"&q=STATUS", "").data(); len(d) != 1 {
			t.Fatalf("filtered list: %d", len(d))
		}
		if d := e.expect(200, "", "reader", "GET", "/actions?q=nothing-like-this", "").data(); len(d) != 0 {
			t.Fatalf("search found %d", len(d))
		}
		e.expect(404, "ObjectTypeNotFound", "reader", "GET", "/actions?object_type_id=Nope", "")

		r = e.expect(200, "", "writer", "PUT", "/actions/"+id, strings.Replace(def, "Set status", "Change status", 1))
		if r.body["version"] != json.Number("2") || r.str("display_name") != "Change status" {
			t.Fatalf("put: %s", r.raw)
		}
		r = e.expect(200, "", "writer", "PATCH", "/actions/"+id, `{"description":"Moves a ticket"}`)
		if r.body["version"] != json.Number("3") || r.str("description") != "Moves a ticket" || r.str("display_name") != "Change status" {
			t.Fatalf("patch: %s", r.raw)
		}
		e.expect(400, "InvalidActionTypeDefinition", "writer", "PATCH", "/actions/"+id, `{"name":"renamed"}`)
		e.expect(400, "InvalidActionTypeDefinition", "writer", "PATCH", "/actions/"+id, `{"policy":{"minimum_clearance":"top-secret"}}`)
		e.expect(400, "InvalidJSON", "writer", "PATCH", "/actions/"+id, `{"polcy":{}}`)
		e.expect(403, "PermissionDenied", "reader", "PATCH", "/actions/"+id, `{"description":"x"}`)
		if v := e.expect(200, "", "reader", "GET", "/actions/"+id, "").body["version"]; v != json.Number("3") {
			t.Fatalf("failed updates changed the version to %v", v)
		}

		// The status property is used by the action: it cannot go, nor can
		// the object type; an inline edit config pins the action.
		r = e.expect(409, "DependentsExist", "writer", "DELETE", "/types/Ticket/properties/status", "")
		if !strings.Contains(r.raw, "set_status") {
			t.Fatalf("409 does not name the action: %s", r.raw)
		}
		r = e.expect(409, "DependentsExist", "writer", "DELETE", "/types/Ticket", "")
		if !strings.Contains(r.raw, "set_status") {
			t.Fatalf("409 does not name the action: %s", r.raw)
		}
		e.expect(400, "InvalidOntologyDefinition", "writer", "PATCH", "/types/Ticket/properties/status", `{"type":"integer"}`)
		e.expect(400, "InvalidOntologyDefinition", "writer", "PATCH", "/types/Ticket/properties/priority", `{"inline_edit_config":{"action_type_id":"set_status"}}`)
		e.expect(200, "", "writer", "PATCH", "/types/Ticket/properties/status", `{"inline_edit_config":{"action_type_id":"set_status"}}`)
		r = e.expect(409, "DependentsExist", "writer", "DELETE", "/actions/"+id, "")
		if !strings.Contains(r.raw, "status") {
			t.Fatalf("409 does not name the property: %s", r.raw)
		}
		e.expect(400, "InvalidActionTypeDefinition", "writer", "PATCH", "/actions/"+id, `{"inputs":[{"name":"status","type":"integer","required":true}]}`)
		e.expect(200, "", "writer", "PATCH", "/types/Ticket/properties/status", `{"inline_edit_config":null}`)
		e.expect(403, "PermissionDenied", "reader", "DELETE", "/actions/"+id, "")
		e.expect(204, "", "writer", "DELETE", "/actions/"+id, "")
		e.expect(404, "ActionTypeNotFound", "writer", "DELETE", "/actions/"+id, "")
		e.expect(204, "", "writer", "DELETE", "/types/Ticket", "")
	})
}

// A cardinality refusal names neither the existing link nor its other end:
// clerk (confidential) can read Dan and Open but not Vault (pii), to which
// Dan is already linked.
func TestOntologyRoutesCardinalityErrorHidesUnreadable(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Employee","properties":[{"name":"name","type":"string"}]}`)
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Team","properties":[{"name":"title","type":"string"}]}`)
		e.expect(201, "", "writer", "POST", "/link-types", `{"name":"member_of","source_object_type_id":"Employee","target_object_type_id":"Team","cardinality":"many_to_one"}`)
		dan := e.expect(201, "", "writer", "POST", "/types/Employee/objects", `{"properties":{"name":"Dan"}}`).str("id")
		vault := e.expect(201, "", "writer", "POST", "/types/Team/objects", `{"properties":{"title":"Vault"},"marking":"pii"}`).str("id")
		open := e.expect(201, "", "writer", "POST", "/types/Team/objects", `{"properties":{"title":"Open"}}`).str("id")
		l := e.expect(201, "", "writer", "POST", "/link-types/member_of/links",
			fmt.Sprintf(`{"source_object_id":%q,"target_object_id":%q}`, dan, vault)).str("id")
		e.expect(404, "ObjectNotFound", "clerk", "GET", "/types/Team/objects/"+vault, "")
		e.expect(404, "LinkNotFound", "clerk", "GET", "/links/"+l, "")

		r := e.expect(409, "LinkCardinalityViolation", "clerk", "POST", "/link-types/member_of/links",
			fmt.Sprintf(`{"source_object_id":%q,"target_object_id":%q}`, dan, open))
		for _, hidden := range []string{vault, l, strings.ToUpper(vault)} {
			if strings.Contains(strings.ToLower(r.raw), strings.ToLower(hidden)) {
				t.Fatalf("cardinality error names %s, which clerk cannot read: %s", hidden, r.raw)
			}
		}
		if !strings.Contains(r.raw, "member_of") || !strings.Contains(r.raw, "source_object_id") {
			t.Fatalf("cardinality error does not say which link type and side: %s", r.raw)
		}
	})
}

// Webhook header values (credentials, typically) are shown only to callers
// who may change the action type; others see the header names with the
// values redacted, in the list and in the single read.
func TestOntologyRoutesWebhookHeadersRedacted(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		const secret = "Bearer s3cr3t-hook-token"
		r := e.expect(201, "", "writer", "POST", "/actions", `{"name":"notify_crm","operation_kind":"invoke_webhook",
			"config":{"operation":{"method":"POST","url":"https://hooks.example.com/crm","headers":{"Authorization":"`+secret+`","X-Env":"prod"}}}}`)
		id := r.str("id")
		if !strings.Contains(r.raw, secret) {
			t.Fatalf("the writer's create response lacks the header value: %s", r.raw)
		}
		headers := func(v any) map[string]any {
			m, _ := v.(map[string]any)
			cfg, _ := m["config"].(map[string]any)
			op, _ := cfg["operation"].(map[string]any)
			h, _ := op["headers"].(map[string]any)
			return h
		}
		for _, path := range []string{"/actions/" + id, "/actions/notify_crm"} {
			r := e.expect(200, "", "reader", "GET", path, "")
			if strings.Contains(r.raw, "s3cr3t") || strings.Contains(r.raw, `"prod"`) {
				t.Fatalf("GET %s as reader shows a header value: %s", path, r.raw)
			}
			if h := headers(r.body); h["Authorization"] != ontology.RedactedValue || h["X-Env"] != ontology.RedactedValue {
				t.Fatalf("GET %s as reader: headers %v, want names with redacted values", path, h)
			}
		}
		list := e.expect(200, "", "reader", "GET", "/actions", "")
		if strings.Contains(list.raw, "s3cr3t") || len(list.data()) != 1 || headers(list.data()[0])["Authorization"] != ontology.RedactedValue {
			t.Fatalf("list as reader: %s", list.raw)
		}
		// Writers (ontology:write, ontology:*, admin) still see the values.
		for _, u := range []string{"writer", "outsider", "admin"} {
			r := e.expect(200, "", u, "GET", "/actions/"+id, "")
			if h := headers(r.body); h["Authorization"] != secret || h["X-Env"] != "prod" {
				t.Fatalf("GET as %s: headers %v, want the stored values", u, h)
			}
			if l := e.expect(200, "", u, "GET", "/actions", ""); headers(l.data()[0])["Authorization"] != secret {
				t.Fatalf("list as %s: %s", u, l.raw)
			}
		}
		// The stored definition is untouched by a reader's view.
		if h := headers(e.expect(200, "", "writer", "GET", "/actions/"+id, "").body); h["Authorization"] != secret {
			t.Fatalf("header value changed after a redacted read: %v", h)
		}
	})
}

// Lowering an object's marking is a declassification: only admins may do
// it. Writers may keep it or raise it up to their clearance.
func TestOntologyRoutesLoweringMarkingNeedsAdmin(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Doc","properties":[{"name":"title","type":"string"}]}`)
		id := e.expect(201, "", "writer", "POST", "/types/Doc/objects", `{"properties":{"title":"Plan"},"marking":"confidential"}`).str("id")
		marking := func() string {
			return e.expect(200, "", "admin", "GET", "/types/Doc/objects/"+id, "").str("marking")
		}
		path := "/types/Doc/objects/" + id

		// clerk (confidential) holds the object's marking and still may not
		// remove it; neither may writer (pii), by PATCH or PUT.
		for _, u := range []string{"clerk", "writer"} {
			r := e.expect(403, "PermissionDenied", u, "PATCH", path, `{"marking":"public"}`)
			if !strings.Contains(r.raw, "marking") {
				t.Fatalf("refusal does not name the marking: %s", r.raw)
			}
			e.expect(403, "PermissionDenied", u, "PATCH", path, `{"properties":{"title":"Plan B"},"marking":"public"}`)
			e.expect(403, "PermissionDenied", u, "PUT", path, `{"properties":{"title":"Plan"},"marking":"public"}`)
			if m := marking(); m != "confidential" {
				t.Fatalf("marking after %s's refused downgrade = %q", u, m)
			}
		}
		if d := e.expect(200, "", "reader", "GET", "/types/Doc/objects", "").data(); len(d) != 0 {
			t.Fatalf("reader (public) sees %d objects after refused downgrades", len(d))
		}
		// The same marking, no marking, and raising are writes as usual.
		e.expect(200, "", "clerk", "PATCH", path, `{"properties":{"title":"Plan C"},"marking":"confidential"}`)
		e.expect(200, "", "clerk", "PUT", path, `{"properties":{"title":"Plan D"}}`)
		if m := marking(); m != "confidential" {
			t.Fatalf("marking after writes that keep it = %q", m)
		}
		e.expect(403, "PermissionDenied", "clerk", "PATCH", path, `{"marking":"pii"}`) // above clerk's clearance
		e.expect(200, "", "writer", "PATCH", path, `{"marking":"pii"}`)
		if m := marking(); m != "pii" {
			t.Fatalf("marking after raise = %q", m)
		}
		e.expect(403, "PermissionDenied", "writer", "PATCH", path, `{"marking":"confidential"}`)
		// An admin may declassify.
		e.expect(200, "", "admin", "PATCH", path, `{"marking":"public"}`)
		if m := marking(); m != "public" {
			t.Fatalf("marking after the admin's downgrade = %q", m)
		}
		e.expect(200, "", "reader", "GET", path, "")
	})
}
