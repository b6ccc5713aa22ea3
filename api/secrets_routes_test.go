package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
	"github.com/ontoflow/ontoflow/users"
)

const secretValue = "xoxb-VALUE-that-must-never-come-back"

type secretsEnv struct {
	t     *testing.T
	url   string
	guest string // bearer token of a guest session of "writer"
	seen  bytes.Buffer
}

func newSecretsEnv(t *testing.T, db *gorm.DB, keys *secrets.Keyring) *secretsEnv {
	t.Helper()
	ctx := context.Background()
	us := &users.Store{DB: db, Levels: auth.DefaultLevels}
	for _, u := range []struct {
		name         string
		roles, perms []string
	}{
		{"admin", []string{"admin"}, nil},
		{"writer", nil, []string{secrets.PermWrite}},
		{"reader", nil, []string{secrets.PermRead}},
		{"plain", nil, []string{"ontology:write"}},
	} {
		name, pw, roles, perms := u.name, ontoPassword, u.roles, u.perms
		if _, err := us.Create(ctx, users.Spec{Username: &name, Password: &pw, Roles: &roles, Permissions: &perms}); err != nil {
			t.Fatal(err)
		}
	}
	as := auth.NewService(db, auth.Options{})
	srv := api.New(api.Deps{
		Users: us, Auth: as, Levels: auth.DefaultLevels,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Routes: []func(*gin.RouterGroup){api.SecretRoutes(secrets.NewStore(db, keys))},
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	env := &secretsEnv{t: t, url: ts.URL + "/api/v1"}
	r := env.do("writer", "POST", "/auth/tokens", `{"guest":true}`)
	if r.status != 201 {
		t.Fatalf("guest token: %d %s", r.status, r.raw)
	}
	env.guest = r.str("token")
	return env
}

// do sends body as user ("guest" = the guest session's token) and keeps
// every answer in seen, which must never hold a secret's value.
func (e *secretsEnv) do(user, method, path, body string) ontoResp {
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
	switch user {
	case "":
	case "guest":
		req.Header.Set("Authorization", "Bearer "+e.guest)
	default:
		req.SetBasicAuth(user, ontoPassword)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	e.seen.Write(b)
	for k, vs := range res.Header {
		e.seen.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
	}
	r := ontoResp{status: res.StatusCode, raw: string(b)}
	json.Unmarshal(b, &r.body)
	return r
}

func TestSecretsAPI(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		raw, _ := secrets.ParseKey(secrets.GenerateKey())
		keys, err := secrets.NewKeyring(raw)
		if err != nil {
			t.Fatal(err)
		}
		e := newSecretsEnv(t, db, keys)

		r := e.do("writer", "POST", "/secrets", `{"name":"SLACK_OPS","value":"`+secretValue+`","description":"ops channel"}`)
		if r.status != 201 || r.str("name") != "SLACK_OPS" || r.str("description") != "ops channel" {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
		for _, k := range []string{"value", "ciphertext", "key_id", "id"} {
			if _, ok := r.body[k]; ok {
				t.Errorf("create answered member %q: %s", k, r.raw)
			}
		}
		steps := []struct {
			name, user, method, path, body string
			status                         int
			code                           string
		}{
			{"duplicate", "writer", "POST", "/secrets", `{"name":"SLACK_OPS","value":"other"}`, 409, "Conflict"},
			{"bad name", "writer", "POST", "/secrets", `{"name":"slack-ops","value":"v"}`, 400, "InvalidArgument"},
			{"name too long", "writer", "POST", "/secrets", `{"name":"` + strings.Repeat("A", 65) + `","value":"v"}`, 400, "InvalidArgument"},
			{"no value", "writer", "POST", "/secrets", `{"name":"X"}`, 400, "InvalidArgument"},
			{"empty value", "writer", "POST", "/secrets", `{"name":"X","value":""}`, 400, "InvalidArgument"},
			{"value not a string", "writer", "POST", "/secrets", `{"name":"X","value":5}`, 400, "InvalidJSON"},
			{"unknown member", "writer", "POST", "/secrets", `{"name":"X","value":"v","secret":true}`, 400, "InvalidJSON"},
			{"reader may not create", "reader", "POST", "/secrets", `{"name":"X","value":"v"}`, 403, "PermissionDenied"},
			{"plain may not list", "plain", "GET", "/secrets", "", 403, "PermissionDenied"},
			{"plain may not read", "plain", "GET", "/secrets/SLACK_OPS", "", 403, "PermissionDenied"},
			{"anonymous", "", "GET", "/secrets", "", 401, "Unauthorized"},
			{"guest may not create", "guest", "POST", "/secrets", `{"name":"X","value":"v"}`, 403, "PermissionDenied"},
			{"guest may not update", "guest", "PUT", "/secrets/SLACK_OPS", `{"value":"v"}`, 403, "PermissionDenied"},
			{"guest may not delete", "guest", "DELETE", "/secrets/SLACK_OPS", "", 403, "PermissionDenied"},
			{"get missing", "reader", "GET", "/secrets/NOPE", "", 404, "SecretNotFound"},
			{"get invalid name", "reader", "GET", "/secrets/a-b", "", 404, "SecretNotFound"},
			{"update missing", "writer", "PUT", "/secrets/NOPE", `{"value":"v"}`, 404, "SecretNotFound"},
			{"update nothing", "writer", "PUT", "/secrets/SLACK_OPS", `{}`, 400, "InvalidArgument"},
			{"delete missing", "writer", "DELETE", "/secrets/NOPE", "", 404, "SecretNotFound"},
			{"bad page size", "reader", "GET", "/secrets?page_size=0", "", 400, "InvalidArgument"},
		}
		for _, s := range steps {
			r := e.do(s.user, s.method, s.path, s.body)
			if r.status != s.status || r.code() != s.code {
				t.Errorf("%s: %d %s, want %d %s", s.name, r.status, r.raw, s.status, s.code)
			}
		}

		// Reads answer metadata; the writer may read too.
		for _, u := range []string{"reader", "writer", "admin", "guest"} {
			r := e.do(u, "GET", "/secrets/SLACK_OPS", "")
			if r.status != 200 || r.str("name") != "SLACK_OPS" || r.body["value"] != nil {
				t.Errorf("%s get: %d %s", u, r.status, r.raw)
			}
		}
		e.do("admin", "POST", "/secrets", `{"name":"A_FIRST","value":"`+secretValue+`2"}`)
		r = e.do("reader", "GET", "/secrets?page_size=1", "")
		if r.status != 200 || len(r.data()) != 1 || r.str("next_page_token") == "" {
			t.Fatalf("list page 1: %d %s", r.status, r.raw)
		}
		if first := r.data()[0].(map[string]any); first["name"] != "A_FIRST" {
			t.Fatalf("list order: %s", r.raw)
		}
		r = e.do("reader", "GET", "/secrets?page_size=1&page_token="+r.str("next_page_token"), "")
		if len(r.data()) != 1 || r.data()[0].(map[string]any)["name"] != "SLACK_OPS" || r.str("next_page_token") != "" {
			t.Fatalf("list page 2: %s", r.raw)
		}

		// Update: the value changes underneath, the description stays.
		r = e.do("writer", "PUT", "/secrets/SLACK_OPS", `{"value":"`+secretValue+`-v2"}`)
		if r.status != 200 || r.str("description") != "ops channel" || r.body["value"] != nil {
			t.Fatalf("update: %d %s", r.status, r.raw)
		}
		st := secrets.NewStore(db, keys)
		if v, err := st.Resolve(context.Background(), "SLACK_OPS"); err != nil || v != secretValue+"-v2" {
			t.Fatalf("after update resolve = %q %v", v, err)
		}
		r = e.do("writer", "PUT", "/secrets/SLACK_OPS", `{"description":"renamed channel"}`)
		if r.status != 200 || r.str("description") != "renamed channel" {
			t.Fatalf("update description: %d %s", r.status, r.raw)
		}
		if v, _ := st.Resolve(context.Background(), "SLACK_OPS"); v != secretValue+"-v2" {
			t.Fatal("a description update changed the value")
		}

		if r := e.do("writer", "DELETE", "/secrets/SLACK_OPS", ""); r.status != 204 {
			t.Fatalf("delete: %d %s", r.status, r.raw)
		}
		if r := e.do("reader", "GET", "/secrets/SLACK_OPS", ""); r.status != 404 {
			t.Fatalf("get after delete: %d", r.status)
		}

		if strings.Contains(e.seen.String(), secretValue) {
			t.Fatal("an answer of the API held a secret's value")
		}
		var rows []models.Secret
		db.Find(&rows)
		for _, row := range rows {
			if bytes.Contains(row.Ciphertext, []byte(secretValue)) {
				t.Fatal("the database holds a value in clear")
			}
		}
	})
}

// TestSecretsAPIWithoutKey: a server started without a key lists
// metadata but refuses to store values with 503 and the JSON error.
func TestSecretsAPIWithoutKey(t *testing.T) {
	e := newSecretsEnv(t, testdb.Open(t, "sqlite"), nil)
	if r := e.do("admin", "POST", "/secrets", `{"name":"X","value":"v"}`); r.status != 503 || r.code() != "Unavailable" || !strings.Contains(r.raw, "ONTOFLOW_SECRET_KEY") {
		t.Fatalf("create without a key: %d %s", r.status, r.raw)
	}
	if r := e.do("admin", "GET", "/secrets", ""); r.status != 200 {
		t.Fatalf("list without a key: %d %s", r.status, r.raw)
	}
}

// TestSecretsAPIUsePolicy: the use policy (use_roles, use_users,
// destinations, channel) is set and read on the secrets routes by those
// who manage secrets, checked (one JSON error shape naming the member),
// shown in normal form, and never with the value.
func TestSecretsAPIUsePolicy(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		raw, _ := secrets.ParseKey(secrets.GenerateKey())
		keys, err := secrets.NewKeyring(raw)
		if err != nil {
			t.Fatal(err)
		}
		e := newSecretsEnv(t, db, keys)
		var writer models.User
		if err := db.Where("username = ?", "writer").Take(&writer).Error; err != nil {
			t.Fatal(err)
		}
		r := e.do("writer", "POST", "/secrets", `{"name":"CRM","value":"`+secretValue+`"}`)
		if r.status != 201 || fmt.Sprint(r.body["use_users"]) != "["+writer.ID+"]" || fmt.Sprint(r.body["use_roles"]) != "[]" ||
			fmt.Sprint(r.body["destinations"]) != "[]" || r.body["channel"] != "" {
			t.Fatalf("create with the default policy: %d %s", r.status, r.raw)
		}
		r = e.do("writer", "POST", "/secrets", `{"name":"SLACK","value":"`+secretValue+`s","channel":"slack","use_roles":["ops"],"use_users":[]}`)
		if r.status != 201 || r.body["channel"] != "slack" || fmt.Sprint(r.body["use_roles"]) != "[ops]" || fmt.Sprint(r.body["use_users"]) != "[]" {
			t.Fatalf("create with a policy: %d %s", r.status, r.raw)
		}
		r = e.do("writer", "PUT", "/secrets/CRM", `{"destinations":["HTTPS://crm.example.com:443/api/","127.0.0.1:9000"],"use_roles":["integrations"]}`)
		if r.status != 200 || fmt.Sprint(r.body["destinations"]) != "[https://crm.example.com/api/ 127.0.0.1:9000]" ||
			fmt.Sprint(r.body["use_roles"]) != "[integrations]" || fmt.Sprint(r.body["use_users"]) != "["+writer.ID+"]" {
			t.Fatalf("set the policy: %d %s", r.status, r.raw)
		}
		r = e.do("reader", "GET", "/secrets/CRM", "")
		if r.status != 200 || fmt.Sprint(r.body["destinations"]) != "[https://crm.example.com/api/ 127.0.0.1:9000]" {
			t.Fatalf("read the policy: %d %s", r.status, r.raw)
		}
		steps := []struct {
			name, user, method, path, body string
			status                         int
			code, field                    string
		}{
			{"bad destination", "writer", "PUT", "/secrets/CRM", `{"destinations":["ftp://x/"]}`, 400, "InvalidArgument", "destinations"},
			{"destination with a query", "writer", "PUT", "/secrets/CRM", `{"destinations":["https://x/?a=1"]}`, 400, "InvalidArgument", "destinations"},
			{"unknown user", "writer", "PUT", "/secrets/CRM", `{"use_users":["5b0f6c1e-0000-4000-8000-000000000000"]}`, 400, "InvalidArgument", "use_users"},
			{"unknown channel", "writer", "PUT", "/secrets/CRM", `{"channel":"fax"}`, 400, "InvalidArgument", "channel"},
			{"destinations not a list", "writer", "PUT", "/secrets/CRM", `{"destinations":"x"}`, 400, "InvalidJSON", ""},
			{"bad policy on create", "writer", "POST", "/secrets", `{"name":"X","value":"v","destinations":["a b"]}`, 400, "InvalidArgument", "destinations"},
			{"reader may not set", "reader", "PUT", "/secrets/CRM", `{"destinations":[]}`, 403, "PermissionDenied", ""},
			{"ontology writer may not set", "plain", "PUT", "/secrets/CRM", `{"use_users":[]}`, 403, "PermissionDenied", ""},
			{"guest may not set", "guest", "PUT", "/secrets/CRM", `{"destinations":[]}`, 403, "PermissionDenied", ""},
		}
		for _, s := range steps {
			r := e.do(s.user, s.method, s.path, s.body)
			if r.status != s.status || r.code() != s.code {
				t.Errorf("%s: %d %s, want %d %s", s.name, r.status, r.raw, s.status, s.code)
				continue
			}
			if s.field != "" && !strings.Contains(r.raw, `"field":"`+s.field+`"`) {
				t.Errorf("%s: the error does not name %s: %s", s.name, s.field, r.raw)
			}
		}
		if r := e.do("reader", "GET", "/secrets/X", ""); r.status != 404 {
			t.Errorf("a refused create stored the secret: %d", r.status)
		}
		if r := e.do("reader", "GET", "/secrets/CRM", ""); fmt.Sprint(r.body["destinations"]) != "[https://crm.example.com/api/ 127.0.0.1:9000]" {
			t.Errorf("a refused update changed the policy: %s", r.raw)
		}
		if strings.Contains(e.seen.String(), secretValue) {
			t.Fatal("an answer of the API held a secret's value")
		}
	})
}
