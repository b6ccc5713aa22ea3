package console_test

import (
	"bytes"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var (
	appSecretRE = regexp.MustCompile(`id="app-password-secret">(ofa_[A-Za-z0-9_-]+)<`)
	revokeRE    = regexp.MustCompile(`action="/ui/account/app-passwords/([0-9a-f-]+)/revoke"`)
)

// davStatus answers a PUT to user's WebDAV tree with pw.
func (s *stack) davStatus(user, pw, path string) int {
	s.t.Helper()
	req, _ := http.NewRequest("PUT", s.base+"/webdav"+path, bytes.NewReader([]byte("x")))
	req.SetBasicAuth(user, pw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// An app password created on the account page is shown once, works on
// the real WebDAV handler with the username, does not sign in to the
// console, shows its last use, and stops at once when revoked there.
func TestConsoleAppPasswords(t *testing.T) {
	s := startStack(t)
	base := s.base + "/ui"
	h := signIn(t, base, "admin", adminPassword)
	_, page := send(t, "GET", base+"/account", nil, h)
	csrf := csrfRE.FindStringSubmatch(page)
	if csrf == nil || !strings.Contains(page, "No app passwords.") {
		t.Fatalf("account page:\n%s", page)
	}
	form := url.Values{"csrf": {csrf[1]}, "name": {"laptop <davfs2>"}, "scope": {"webdav"}, "days": {"30"}}
	if resp, _ := send(t, "POST", base+"/account/app-passwords", form, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("create without a session: %d", resp.StatusCode)
	}
	if resp, _ := send(t, "POST", base+"/account/app-passwords", url.Values{"name": {"x"}}, h); resp.StatusCode != http.StatusForbidden {
		t.Errorf("create without the CSRF token: %d", resp.StatusCode)
	}
	bad := url.Values{"csrf": {csrf[1]}, "name": {"x"}, "days": {"-3"}}
	if resp, body := send(t, "POST", base+"/account/app-passwords", bad, h); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "account-error") {
		t.Errorf("negative expiry: %d", resp.StatusCode)
	}
	resp, page := send(t, "POST", base+"/account/app-passwords", form, h)
	m := appSecretRE.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusCreated || m == nil || !strings.Contains(page, "laptop &lt;davfs2&gt;") {
		t.Fatalf("create: %d\n%s", resp.StatusCode, page)
	}
	secret := m[1]
	if st := s.davStatus("admin", secret, "/from-app-password.txt"); st != http.StatusCreated {
		t.Fatalf("WebDAV PUT with the app password: %d", st)
	}
	if st, _ := s.doAs("admin", secret, "GET", "/api/v1/me", nil); st != http.StatusUnauthorized {
		t.Errorf("WebDAV-only app password on the API: %d", st)
	}
	if resp, _ := send(t, "POST", base+"/login", url.Values{"username": {"admin"}, "password": {secret}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("console sign-in with an app password: %d", resp.StatusCode)
	}
	_, page = send(t, "GET", base+"/account", nil, h)
	if strings.Contains(page, secret) || strings.Contains(page, "never</td>\n  <td>20") {
		t.Errorf("the list shows the secret or no last use:\n%s", page)
	}
	id := revokeRE.FindStringSubmatch(page)
	if id == nil {
		t.Fatalf("no revoke button:\n%s", page)
	}
	resp, _ = send(t, "POST", base+"/account/app-passwords/"+id[1]+"/revoke", url.Values{"csrf": {csrf[1]}}, h)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if st := s.davStatus("admin", secret, "/after-revoke.txt"); st != http.StatusUnauthorized {
		t.Errorf("WebDAV PUT with the revoked app password: %d", st)
	}
	if _, page = send(t, "GET", base+"/account", nil, h); !strings.Contains(page, "revoked") {
		t.Errorf("the list does not show it revoked:\n%s", page)
	}
}
