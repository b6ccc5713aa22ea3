package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"gopkg.in/yaml.v3"

	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/automations"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/secrets"
)

// allRouteGroups are every route group the processes register on
// /api/v1 (as app.startHTTP does). A new group goes here too, so the test
// below holds it to the document.
func allRouteGroups() []func(*gin.RouterGroup) {
	return []func(*gin.RouterGroup){
		api.OntologyRoutes(ontology.NewStore(nil, auth.DefaultLevels, nil)),
		api.ActionRoutes(api.ActionDeps{}),
		api.BranchRoutes(api.ActionDeps{}),
		api.SecretRoutes(secrets.NewStore(nil, nil)),
		api.FunctionRoutes(nil, nil),
		api.AutomationRoutes(&automations.Store{}),
	}
}

type openAPIDoc struct {
	OpenAPI    string                               `yaml:"openapi"`
	Paths      map[string]map[string]any            `yaml:"paths"`
	Components map[string]map[string]map[string]any `yaml:"components"`
}

func loadOpenAPI(t *testing.T) (openAPIDoc, any) {
	t.Helper()
	var doc openAPIDoc
	if err := yaml.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.yaml is not valid YAML: %v", err)
	}
	var raw any
	if err := yaml.Unmarshal(api.OpenAPI, &raw); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q, want 3.x", doc.OpenAPI)
	}
	return doc, raw
}

var ginParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// TestOpenAPICoversEveryRoute fails when a route of the router (method and
// path) is missing from openapi.yaml.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	srv := api.New(api.Deps{Auth: auth.NewService(nil, auth.Options{}), Levels: auth.DefaultLevels, Routes: allRouteGroups()})
	var missing []string
	routes := srv.Router().Routes()
	if len(routes) < 40 {
		t.Fatalf("the router has only %d routes; the route groups did not register", len(routes))
	}
	for _, r := range routes {
		path := ginParam.ReplaceAllString(r.Path, "{$1}")
		if _, ok := doc.Paths[path][strings.ToLower(r.Method)]; !ok {
			missing = append(missing, r.Method+" "+path)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("routes missing from api/openapi.yaml:\n  %s", strings.Join(missing, "\n  "))
	}
}

var docParam = regexp.MustCompile(`\{([^}]+)\}`)

// TestOpenAPIConsistent checks the document itself: every operation has
// responses, every path parameter is declared, every $ref resolves.
func TestOpenAPIConsistent(t *testing.T) {
	doc, raw := loadOpenAPI(t)
	resolve := func(v any) map[string]any {
		m, _ := v.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
			if len(parts) == 3 && parts[0] == "components" {
				return doc.Components[parts[1]][parts[2]]
			}
			return nil
		}
		return m
	}
	declared := func(list any, into map[string]bool) {
		items, _ := list.([]any)
		for _, it := range items {
			p := resolve(it)
			if p == nil {
				t.Errorf("unresolvable parameter %v", it)
				continue
			}
			if p["in"] == "path" {
				name, _ := p["name"].(string)
				into[name] = true
			}
		}
	}
	methods := map[string]bool{"get": true, "put": true, "post": true, "patch": true, "delete": true, "head": true, "options": true}
	for path, item := range doc.Paths {
		pathParams := map[string]bool{}
		declared(item["parameters"], pathParams)
		for m, op := range item {
			if m == "parameters" {
				continue
			}
			if !methods[m] {
				t.Errorf("%s: unknown member %q", path, m)
				continue
			}
			opm, _ := op.(map[string]any)
			if _, ok := opm["responses"].(map[string]any); !ok {
				t.Errorf("%s %s has no responses", m, path)
			}
			params := map[string]bool{}
			for k := range pathParams {
				params[k] = true
			}
			declared(opm["parameters"], params)
			for _, pm := range docParam.FindAllStringSubmatch(path, -1) {
				if !params[pm[1]] {
					t.Errorf("%s %s: path parameter %s is not declared", m, path, pm[1])
				}
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if ref, ok := e.(string); k == "$ref" && ok {
					parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
					if len(parts) != 3 || doc.Components[parts[1]][parts[2]] == nil {
						t.Errorf("$ref %s does not resolve", ref)
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(raw)
}

// TestOpenAPIServed serves the embedded document at both addresses,
// without credentials.
func TestOpenAPIServed(t *testing.T) {
	srv := api.New(api.Deps{Auth: auth.NewService(nil, auth.Options{}), Levels: auth.DefaultLevels, Routes: allRouteGroups()})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, p := range []string{"/openapi.yaml", "/api/v1/openapi.yaml"} {
		res, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || string(b) != string(api.OpenAPI) {
			t.Fatalf("GET %s: %d, %d bytes; want 200 and the document", p, res.StatusCode, len(b))
		}
	}
}
