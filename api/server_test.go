package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/users"
)

// foundation is an API server with only the foundation's routes, a test
// route that panics, a fake WebDAV handler that records it was reached, and
// a readiness check the test can break.
type foundation struct {
	srv      *httptest.Server
	db       *gorm.DB
	notReady error
	davHits  int
}

func newFoundation(t *testing.T, db *gorm.DB) *foundation {
	t.Helper()
	f := &foundation{db: db}
	s := api.New(api.Deps{
		Users: &users.Store{DB: db, Levels: auth.DefaultLevels}, Auth: auth.NewService(db, auth.Options{}), Levels: auth.DefaultLevels,
		MaxBodyBytes: 1024,
		WebDAV: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.davHits++
			w.WriteHeader(http.StatusMultiStatus)
		}),
		Ready: func(context.Context) error { return f.notReady },
		Routes: []func(g *gin.RouterGroup){func(g *gin.RouterGroup) {
			g.GET("/test/panic", func(*gin.Context) { panic("boom") })
		}},
	})
	f.srv = httptest.NewServer(s.Handler())
	t.Cleanup(f.srv.Close)
	st := &users.Store{DB: db, Levels: auth.DefaultLevels}
	for _, u := range []struct {
		name  string
		roles []string
	}{{"admin", []string{"admin"}}, {"plain", nil}} {
		name, pw, roles := u.name, u.name+"-password", u.roles
		if _, err := st.Create(context.Background(), users.Spec{Username: &name, Password: &pw, Roles: &roles}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) code() string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		return "not-json: " + string(r.body)
	}
	return e.Error.Code
}

func (f *foundation) do(t *testing.T, user, method, path, ctype string, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if user != "" {
		req.SetBasicAuth(user, user+"-password")
	}
	return send(t, req)
}

// send sends req and reads the whole answer.
func send(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

func (f *foundation) json(t *testing.T, user, method, path, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	return f.do(t, user, method, path, "application/json", rd)
}

func TestHealthAndReadiness(t *testing.T) {
	f := newFoundation(t, testdb.Open(t, "sqlite"))
	if r := f.json(t, "", "GET", "/healthz", ""); r.status != 200 {
		t.Errorf("healthz: %d", r.status)
	}
	if r := f.json(t, "", "GET", "/readyz", ""); r.status != 200 {
		t.Errorf("readyz: %d", r.status)
	}
	f.notReady = errors.New("database down")
	if r := f.json(t, "", "GET", "/readyz", ""); r.status != 503 || r.code() != "Unavailable" {
		t.Errorf("readyz when not ready: %d %s", r.status, r.body)
	}
	if r := f.json(t, "", "GET", "/metrics", ""); r.status != 200 || !bytes.Contains(r.body, []byte("ontoflow_api_requests_total")) {
		t.Errorf("metrics: %d", r.status)
	}
}

func TestConventions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		cases := []struct {
			name         string
			user, method string
			path, ctype  string
			body         string
			status       int
			code         string
		}{
			{"no credentials", "", "GET", "/api/v1/me", "", "", 401, "Unauthorized"},
			{"unknown route", "admin", "GET", "/api/v1/nothing-here", "", "", 404, "NotFound"},
			{"truncated JSON", "admin", "POST", "/api/v1/users", "application/json", `{"username":`, 400, "InvalidJSON"},
			{"malformed JSON", "admin", "POST", "/api/v1/users", "application/json", `{username}`, 400, "InvalidJSON"},
			{"unknown field", "admin", "POST", "/api/v1/users", "application/json", `{"username":"x","password":"long-enough","colour":"red"}`, 400, "InvalidJSON"},
			{"wrong type", "admin", "POST", "/api/v1/users", "application/json", `{"username":7}`, 400, "InvalidJSON"},
			{"two values", "admin", "POST", "/api/v1/users", "application/json", `{} {}`, 400, "InvalidJSON"},
			{"empty body", "admin", "POST", "/api/v1/users", "application/json", ``, 400, "InvalidJSON"},
			{"wrong content type", "admin", "POST", "/api/v1/users", "text/plain", `{}`, 400, "InvalidJSON"},
			{"too large", "admin", "POST", "/api/v1/users", "application/json", `{"username":"` + strings.Repeat("x", 2000) + `"}`, 413, "RequestEntityTooLarge"},
			{"not permitted", "plain", "POST", "/api/v1/users", "application/json", `{"username":"x1","password":"long-enough"}`, 403, "PermissionDenied"},
			{"invalid user", "admin", "POST", "/api/v1/users", "application/json", `{"username":"x1","password":"short"}`, 400, "InvalidArgument"},
			{"duplicate user", "admin", "POST", "/api/v1/users", "application/json", `{"username":"plain","password":"long-enough"}`, 409, "Conflict"},
			{"unknown user", "admin", "GET", "/api/v1/users/nobody", "", "", 404, "UserNotFound"},
			{"other user's record", "plain", "GET", "/api/v1/users/admin", "", "", 403, "PermissionDenied"},
			{"bad page size", "admin", "GET", "/api/v1/users?page_size=0", "", "", 400, "InvalidArgument"},
			{"huge page size", "admin", "GET", "/api/v1/users?page_size=100000", "", "", 400, "InvalidArgument"},
			{"forged page token", "admin", "GET", "/api/v1/users?page_token=not*base64", "", "", 400, "InvalidArgument"},
			{"negative ttl", "admin", "POST", "/api/v1/auth/tokens", "application/json", `{"ttl_seconds":-5}`, 400, "InvalidArgument"},
			{"ttl too long", "admin", "POST", "/api/v1/auth/tokens", "application/json", `{"ttl_seconds":999999999}`, 400, "InvalidArgument"},
			{"ttl overflowing a duration", "admin", "POST", "/api/v1/auth/tokens", "application/json", `{"ttl_seconds":9000000000000000000}`, 400, "InvalidArgument"},
			{"revoke unknown token", "admin", "DELETE", "/api/v1/auth/tokens/nope", "", "", 404, "TokenNotFound"},
			{"panic", "admin", "GET", "/api/v1/test/panic", "", "", 500, "Internal"},
		}
		for _, c := range cases {
			var body io.Reader
			if c.body != "" || c.method == "POST" {
				body = strings.NewReader(c.body)
			}
			r := f.do(t, c.user, c.method, c.path, c.ctype, body)
			if r.status != c.status || r.code() != c.code {
				t.Errorf("%s: got %d %s, want %d %s", c.name, r.status, r.body, c.status, c.code)
			}
			if r.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s: 401 without a Basic challenge", c.name)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s: error body has Content-Type %q", c.name, ct)
			}
		}
		if r := f.json(t, "admin", "PUT", "/api/v1/me", "{}"); r.status != 405 || r.code() != "MethodNotAllowed" || !strings.Contains(r.header.Get("Allow"), "GET") {
			t.Errorf("wrong method: %d %s (Allow %q)", r.status, r.body, r.header.Get("Allow"))
		}
	})
}

func TestUserPagination(t *testing.T) {
	f := newFoundation(t, testdb.Open(t, "sqlite"))
	for _, n := range []string{"u1", "u2", "u3"} {
		if r := f.json(t, "admin", "POST", "/api/v1/users", `{"username":"`+n+`","password":"long-enough"}`); r.status != 201 {
			t.Fatalf("create %s: %d %s", n, r.status, r.body)
		}
	}
	var seen []string
	path := "/api/v1/users?page_size=2"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		r := f.json(t, "admin", "GET", path, "")
		var page struct {
			Data []struct {
				Username string `json:"username"`
			} `json:"data"`
			Next string `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
			t.Fatalf("page: %d %s", r.status, r.body)
		}
		for _, u := range page.Data {
			seen = append(seen, u.Username)
		}
		if page.Next == "" {
			break
		}
		path = "/api/v1/users?page_size=2&page_token=" + page.Next
	}
	if strings.Join(seen, ",") != "admin,plain,u1,u2,u3" {
		t.Errorf("paged users = %v", seen)
	}
	if strings.Contains(string(f.json(t, "admin", "GET", "/api/v1/users", "").body), "password") {
		t.Errorf("user list exposes password material")
	}
}

// A guest session can only issue further guest tokens.
func TestGuestCannotEscalate(t *testing.T) {
	f := newFoundation(t, testdb.Open(t, "sqlite"))
	r := f.json(t, "plain", "POST", "/api/v1/auth/tokens", `{"guest":true}`)
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(r.body, &tok); err != nil || r.status != 201 {
		t.Fatalf("issue guest token: %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest("POST", f.srv.URL+"/api/v1/auth/tokens", strings.NewReader(`{"guest":false}`))
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Info struct {
			Guest bool `json:"guest"`
		} `json:"token_info"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 201 || !out.Info.Guest {
		t.Errorf("token issued by a guest session: status %d guest=%v", resp.StatusCode, out.Info.Guest)
	}
}

// WebDAV paths and the root probes of Windows and macOS reach the WebDAV
// handler; everything else stays with the API.
func TestWebDAVDispatch(t *testing.T) {
	f := newFoundation(t, testdb.Open(t, "sqlite"))
	for _, c := range []struct {
		method, path string
		dav          bool
	}{
		{"PROPFIND", "/webdav/", true}, {"GET", "/webdav", true}, {"OPTIONS", "/", true},
		{"PROPFIND", "/", true}, {"GET", "/", false}, {"GET", "/webdavx", false}, {"GET", "/healthz", false},
	} {
		before := f.davHits
		f.do(t, "", c.method, c.path, "", nil)
		if got := f.davHits > before; got != c.dav {
			t.Errorf("%s %s reached WebDAV = %v, want %v", c.method, c.path, got, c.dav)
		}
	}
}

// users:admin cannot be turned into the admin role: its holder may not
// grant roles, permissions or clearance, touch an admin, or edit itself.
func TestUsersAdminCannotEscalate(t *testing.T) {
	f := newFoundation(t, testdb.Open(t, "sqlite"))
	if r := f.json(t, "admin", "POST", "/api/v1/users", `{"username":"manager","password":"manager-password","permissions":["users:admin"]}`); r.status != 201 {
		t.Fatalf("create manager: %d %s", r.status, r.body)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/v1/users/manager", `{"roles":["admin"]}`},
		{"/api/v1/users/plain", `{"permissions":["*:*"]}`},
		{"/api/v1/users/plain", `{"clearance":"pii"}`},
		{"/api/v1/users/admin", `{"password":"taken-over-1"}`},
		{"/api/v1/users/manager", `{"organization":"elsewhere"}`},
	} {
		if r := f.json(t, "manager", "PATCH", c.path, c.body); r.status != 403 || r.code() != "PermissionDenied" {
			t.Errorf("PATCH %s %s by users:admin: %d %s", c.path, c.body, r.status, r.body)
		}
	}
	if r := f.json(t, "manager", "PATCH", "/api/v1/users/plain", `{"disabled":true}`); r.status != 200 {
		t.Errorf("users:admin disabling a plain user: %d %s", r.status, r.body)
	}
}

// bearer sends a request with a bearer token.
func (f *foundation) bearer(t *testing.T, token, method, path, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return send(t, req)
}

// issue issues a token for user over Basic and returns its secret and id.
func (f *foundation) issue(t *testing.T, user, body string) (secret, id string) {
	t.Helper()
	r := f.json(t, user, "POST", "/api/v1/auth/tokens", body)
	var tok struct {
		Token string `json:"token"`
		Info  struct {
			ID string `json:"id"`
		} `json:"token_info"`
	}
	if err := json.Unmarshal(r.body, &tok); err != nil || r.status != 201 {
		t.Fatalf("issue token for %s: %d %s", user, r.status, r.body)
	}
	return tok.Token, tok.Info.ID
}

// A guest session may revoke itself and the user's other guest tokens,
// never the user's full tokens (403), even when the user is an admin; it
// lists only the guest tokens.
func TestGuestRevokesOnlyGuestTokens(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		for _, user := range []string{"plain", "admin"} {
			full, fullID := f.issue(t, user, `{"name":"cli"}`)
			guest, guestID := f.issue(t, user, `{"guest":true}`)
			_, otherGuestID := f.issue(t, user, `{"guest":true}`)

			if r := f.bearer(t, guest, "GET", "/api/v1/auth/tokens", ""); r.status != 200 || strings.Contains(string(r.body), fullID) ||
				!strings.Contains(string(r.body), otherGuestID) {
				t.Fatalf("%s: a guest session's token list must hold the guest tokens only: %d %s", user, r.status, r.body)
			}
			if r := f.bearer(t, full, "GET", "/api/v1/auth/tokens", ""); r.status != 200 || !strings.Contains(string(r.body), fullID) {
				t.Fatalf("%s: a full token's list must hold every token: %d %s", user, r.status, r.body)
			}
			r := f.bearer(t, guest, "DELETE", "/api/v1/auth/tokens/"+fullID, "")
			if r.status != 403 || r.code() != "PermissionDenied" {
				t.Fatalf("%s: guest revoking a full token: %d %s", user, r.status, r.body)
			}
			if r := f.bearer(t, full, "GET", "/api/v1/me", ""); r.status != 200 {
				t.Fatalf("%s: full token after the refused revoke: %d %s", user, r.status, r.body)
			}
			if r := f.bearer(t, guest, "DELETE", "/api/v1/auth/tokens/"+otherGuestID, ""); r.status != 204 {
				t.Fatalf("%s: guest revoking another guest token: %d %s", user, r.status, r.body)
			}
			if r := f.bearer(t, guest, "DELETE", "/api/v1/auth/tokens/"+guestID, ""); r.status != 204 {
				t.Fatalf("%s: guest revoking itself: %d %s", user, r.status, r.body)
			}
			if r := f.bearer(t, guest, "GET", "/api/v1/me", ""); r.status != 401 {
				t.Fatalf("%s: revoked guest token still works: %d", user, r.status)
			}
			// The full token can still revoke itself.
			if r := f.bearer(t, full, "DELETE", "/api/v1/auth/tokens/"+fullID, ""); r.status != 204 {
				t.Fatalf("%s: full token revoking itself: %d %s", user, r.status, r.body)
			}
		}
		// An admin's guest session cannot reach another user's tokens.
		_, plainID := f.issue(t, "plain", `{"guest":true}`)
		adminGuest, _ := f.issue(t, "admin", `{"guest":true}`)
		if r := f.bearer(t, adminGuest, "DELETE", "/api/v1/auth/tokens/"+plainID, ""); r.status != 404 || r.code() != "TokenNotFound" {
			t.Fatalf("admin's guest session revoking another user's token: %d %s", r.status, r.body)
		}
	})
}

// An organization longer than its column is a 400 naming the field, on
// Postgres as on SQLite (Postgres used to answer 500).
func TestUserOrganizationTooLong(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		long := strings.Repeat("o", 129)
		r := f.json(t, "admin", "POST", "/api/v1/users", `{"username":"olga","password":"long-enough","organization":"`+long+`"}`)
		if r.status != 400 || r.code() != "InvalidArgument" || !strings.Contains(string(r.body), "organization") {
			t.Fatalf("create with a 129-character organization: %d %s", r.status, r.body)
		}
		if r := f.json(t, "admin", "PATCH", "/api/v1/users/plain", `{"organization":"`+long+`"}`); r.status != 400 || r.code() != "InvalidArgument" {
			t.Fatalf("update to a 129-character organization: %d %s", r.status, r.body)
		}
		if r := f.json(t, "admin", "PATCH", "/api/v1/users/plain", `{"organization":"`+long[:128]+`"}`); r.status != 200 {
			t.Fatalf("update to a 128-character organization: %d %s", r.status, r.body)
		}
	})
}

// A UUID-shaped username is refused (users are addressed by id or name).
func TestUsernameMustNotBeUUID(t *testing.T) {
	f := newFoundation(t, testdb.Open(t, "sqlite"))
	for _, name := range []string{"0b6c1a52-8f7e-4d7a-9a53-2f1f0e8b9c11", "0B6C1A52-8F7E-4D7A-9A53-2F1F0E8B9C11", "0b6c1a528f7e4d7a9a532f1f0e8b9c11"} {
		r := f.json(t, "admin", "POST", "/api/v1/users", `{"username":"`+name+`","password":"long-enough"}`)
		if r.status != 400 || r.code() != "InvalidArgument" || !strings.Contains(string(r.body), "UUID") {
			t.Errorf("create user %s: %d %s", name, r.status, r.body)
		}
		if r := f.json(t, "admin", "PATCH", "/api/v1/users/plain", `{"username":"`+name+`"}`); r.status != 400 || r.code() != "InvalidArgument" {
			t.Errorf("rename to %s: %d %s", name, r.status, r.body)
		}
	}
}

// Repeated failures make the API answer 429 TooManyRequests with
// Retry-After and the JSON error body, for Basic and bearer alike, and for
// the right password too while the limit holds.
func TestAuthThrottleAnswers429(t *testing.T) {
	f := newFoundation(t, testdb.Open(t, "sqlite"))
	var r reply
	failures := 0
	for ; failures < 30; failures++ {
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/me", nil)
		req.SetBasicAuth("plain", "wrong-password")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r = reply{resp.StatusCode, resp.Header, b}
		if r.status != 401 {
			break
		}
	}
	// The default limit is 5; each further failure doubles the window, so
	// the refusal comes within a few attempts even on a slow machine.
	if r.status != 429 || r.code() != "TooManyRequests" || failures < 5 || failures > 12 {
		t.Fatalf("after %d failures: %d %s; want 429 TooManyRequests after 5 or a few more", failures, r.status, r.body)
	}
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After = %q", r.header.Get("Retry-After"))
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("429 Content-Type %q", ct)
	}
	if r := f.json(t, "plain", "GET", "/api/v1/me", ""); r.status != 429 {
		t.Fatalf("right password while over the limit: %d %s", r.status, r.body)
	}
	// Bad bearer tokens count against the address (default limit 20,
	// reached with the failures above): refused with 429 in turn.
	for i := 0; ; i++ {
		r := f.bearer(t, "oft_not-a-real-token", "GET", "/api/v1/me", "")
		if r.status == 429 {
			if r.code() != "TooManyRequests" || r.header.Get("Retry-After") == "" {
				t.Fatalf("bearer refusal: %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
			}
			if failures+i < 20 {
				t.Fatalf("address refused after %d failures, below its limit of 20", failures+i)
			}
			break
		}
		if r.status != 401 || i > 30 {
			t.Fatalf("bad bearer token #%d: %d %s", i, r.status, r.body)
		}
	}
}

// Hostile bytes in credentials, path, query and body are refused with a
// 4xx and a JSON error on every database (on Postgres they used to reach a
// query and come back as a 500).
func TestHostileInputIsRefused(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		for _, name := range []string{"\xff", "ad\x00min"} {
			req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/me", nil)
			req.SetBasicAuth(name, "x")
			if r := send(t, req); r.status != 401 || r.code() != "Unauthorized" {
				t.Errorf("Basic user %q: %d %s", name, r.status, r.body)
			}
		}
		for _, p := range []string{"/api/v1/users/%FF", "/api/v1/users/a%00b", "/api/v1/users/%C0", "/api/v1/users?page_token=%FF", "/api/v1/users?page_token=LTE", "/api/v1/auth/tokens?page_size=0"} {
			if r := f.json(t, "admin", "GET", p, ""); r.status != 400 || r.code() != "InvalidArgument" {
				t.Errorf("GET %s: %d %s", p, r.status, r.body)
			}
		}
		if r := f.json(t, "admin", "DELETE", "/api/v1/auth/tokens/%FF", ""); r.status != 400 || r.code() != "InvalidArgument" {
			t.Errorf("DELETE a token id that is not text: %d %s", r.status, r.body)
		}
		if r := f.json(t, "plain", "POST", "/api/v1/auth/tokens", `{"name":"a\u0000b"}`); r.status != 400 || r.code() != "InvalidJSON" {
			t.Errorf("NUL in a token name: %d %s", r.status, r.body)
		}
		// An escaped backslash before u0000 is text, not a NUL.
		if r := f.json(t, "plain", "POST", "/api/v1/auth/tokens", `{"name":"a\\u0000b"}`); r.status != 201 {
			t.Errorf(`token named a\\u0000b: %d %s`, r.status, r.body)
		}
	})
}
