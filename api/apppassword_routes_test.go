package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// App passwords over the API: created with the account password (shown
// once), used with the username, refused on the API when scoped to
// WebDAV, unable to mint credentials, listed without secrets, and dead
// at once when revoked.
func TestAppPasswordRoutes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFoundation(t, db)
		create := func(body string) (string, string) {
			t.Helper()
			r := f.json(t, "plain", "POST", "/api/v1/auth/app-passwords", body)
			var out struct {
				Password string `json:"password"`
				App      struct {
					ID string `json:"id"`
				} `json:"app_password"`
			}
			if r.status != http.StatusCreated || json.Unmarshal(r.body, &out) != nil || out.Password == "" {
				t.Fatalf("create %s: %d %s", body, r.status, r.body)
			}
			return out.Password, out.App.ID
		}
		davOnly, _ := create(`{"name":"finder"}`)
		both, bothID := create(`{"name":"script","scope":"webdav+api"}`)

		as := func(pw, method, path, body string) reply {
			t.Helper()
			req, _ := http.NewRequest(method, f.srv.URL+path, nil)
			if body != "" {
				req, _ = http.NewRequest(method, f.srv.URL+path, stringsReader(body))
				req.Header.Set("Content-Type", "application/json")
			}
			req.SetBasicAuth("plain", pw)
			return send(t, req)
		}
		if r := as(davOnly, "GET", "/api/v1/me", ""); r.status != 401 || r.code() != "Unauthorized" {
			t.Errorf("webdav-only app password on the API: %d %s", r.status, r.body)
		}
		if r := as(both, "GET", "/api/v1/me", ""); r.status != 200 {
			t.Errorf("webdav+api app password on the API: %d %s", r.status, r.body)
		}
		if r := as(both, "POST", "/api/v1/auth/tokens", "{}"); r.status != 403 || r.code() != "PermissionDenied" {
			t.Errorf("token through an app password: %d %s", r.status, r.body)
		}
		if r := as(both, "POST", "/api/v1/auth/app-passwords", `{"name":"x"}`); r.status != 403 {
			t.Errorf("app password through an app password: %d %s", r.status, r.body)
		}
		for _, bad := range []string{`{"name":""}`, `{"name":"x","scope":"api"}`, `{"name":"x","expires_at":"2001-01-01T00:00:00Z"}`} {
			if r := f.json(t, "plain", "POST", "/api/v1/auth/app-passwords", bad); r.status != 400 || r.code() != "InvalidArgument" {
				t.Errorf("create %s: %d %s", bad, r.status, r.body)
			}
		}
		r := f.json(t, "plain", "GET", "/api/v1/auth/app-passwords", "")
		if r.status != 200 || stringsContains(r.body, davOnly[4:]) || stringsContains(r.body, "argon2") {
			t.Errorf("list: %d %s", r.status, r.body)
		}
		if r := f.json(t, "admin", "GET", "/api/v1/auth/app-passwords", ""); r.status != 200 || stringsContains(r.body, bothID) {
			t.Errorf("admin's list shows plain's: %s", r.body)
		}
		if r := f.json(t, "plain", "DELETE", "/api/v1/auth/app-passwords/"+bothID, ""); r.status != 204 {
			t.Fatalf("revoke: %d %s", r.status, r.body)
		}
		if r := as(both, "GET", "/api/v1/me", ""); r.status != 401 {
			t.Errorf("revoked app password on the API: %d %s", r.status, r.body)
		}
		if r := f.json(t, "plain", "DELETE", "/api/v1/auth/app-passwords/"+bothID, ""); r.status != 404 || r.code() != "NotFound" {
			t.Errorf("revoke again: %d %s", r.status, r.body)
		}
	})
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func stringsContains(b []byte, s string) bool { return strings.Contains(string(b), s) }
