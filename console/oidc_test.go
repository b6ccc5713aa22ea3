package console_test

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/models"
)

// oidcStack is a dev process whose console signs in with a real OpenID
// provider (mockoidc) on loopback.
type oidcStack struct {
	*stack
	idp *mockoidc.MockOIDC
}

func startOIDCStack(t *testing.T, more ...string) *oidcStack {
	t.Helper()
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	// The public URL must be known before the process starts (it is the
	// redirect URL): take a free loopback port for it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("ONTOFLOW_OIDC_CLIENT_SECRET", m.ClientSecret)
	args := append([]string{"--http-addr", addr, "--public-url", "http://" + addr,
		"--oidc-issuer", m.Issuer(), "--oidc-client-id", m.ClientID, "--oidc-scopes", "openid,profile,email,groups",
		"--oidc-role-map", "admins:admin", "--oidc-required-group", "staff", "--oidc-label", "Example SSO"}, more...)
	a := devtest.Start(t, adminPassword, args, nil)
	return &oidcStack{stack: &stack{t: t, base: a.APIURL, app: a}, idp: m}
}

// browserClient keeps cookies and follows redirects, as a browser does.
func browserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The browser's whole round trip: the sign-in page offers the provider,
// its button leads there and back, the callback creates the user from the
// claims and signs it in with a console session, the return path is kept
// only when it is the console's own, and signing out ends the session.
func TestConsoleOIDCSignIn(t *testing.T) {
	s := startOIDCStack(t)
	ui := s.base + "/ui"
	_, page := get(t, browserClient(t), ui+"/login")
	if !strings.Contains(page, "Sign in with Example SSO") || !strings.Contains(page, `id="password"`) {
		t.Fatalf("sign-in page:\n%s", page)
	}

	b := browserClient(t)
	s.idp.QueueUser(&mockoidc.MockUser{Subject: "sub-erin", PreferredUsername: "erin", Groups: []string{"staff", "admins"}})
	resp, page := get(t, b, ui+"/auth/login?return="+url.QueryEscape("//evil.example/steal"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `content="0;url=/ui/"`) {
		t.Fatalf("callback: %d %s\n%s", resp.StatusCode, resp.Request.URL, page)
	}
	resp, page = get(t, b, ui+"/account")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "<strong>erin</strong>") {
		t.Fatalf("account page after sign-in: %d %s", resp.StatusCode, resp.Request.URL)
	}
	// The claims made erin an admin: the admin-only users API says so.
	st, body := s.do("GET", "/api/v1/users/erin", nil)
	if st != http.StatusOK || !strings.Contains(string(body), `"admin"`) || !strings.Contains(string(body), `"oidc_subject":"sub-erin"`) {
		t.Fatalf("erin: %d %s", st, body)
	}

	// A return path inside the console is kept.
	s.idp.QueueUser(&mockoidc.MockUser{Subject: "sub-erin", PreferredUsername: "erin", Groups: []string{"staff"}})
	_, page = get(t, browserClient(t), ui+"/auth/login?return="+url.QueryEscape("/ui/log?page=2"))
	if !strings.Contains(page, `content="0;url=/ui/log?page=2"`) {
		t.Errorf("local return path lost:\n%s", page)
	}

	// A callback with no pending sign-in (a replay, or a forged link) is
	// refused and signs no one in.
	c := browserClient(t)
	resp, page = get(t, c, ui+"/auth/callback?code=x&state=y")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "login-error") {
		t.Errorf("callback without a pending sign-in: %d", resp.StatusCode)
	}

	// Outside the required group: refused with the reason.
	s.idp.QueueUser(&mockoidc.MockUser{Subject: "sub-erin", PreferredUsername: "erin", Groups: []string{"admins"}})
	resp, page = get(t, browserClient(t), ui+"/auth/login")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "not admitted") {
		t.Errorf("user outside the required group: %d\n%s", resp.StatusCode, page)
	}
	// ...and the session erin already had is dead.
	resp, _ = get(t, b, ui+"/account")
	if resp.Request.URL.Path != "/ui/login" {
		t.Errorf("the disabled user's session still works: %s", resp.Request.URL)
	}
}

// postForm posts form from the signed-in browser c with the page's CSRF
// token.
func postForm(t *testing.T, c *http.Client, u, csrf string, form url.Values) string {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-CSRF-Token", csrf)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Groups from the provider are principals of action policies: a member
// of the policy's group runs the action from the console it signed in to
// through the provider; a non-member is refused with missing_group.
func TestConsoleOIDCGroupPolicy(t *testing.T) {
	s := startOIDCStack(t)
	w := s.seed()
	ui := s.base + "/ui"
	s.create("/api/v1/ontology/actions", map[string]any{"name": "escalate", "object_type_id": "Ticket",
		"operation_kind": "update_object", "policy": map[string]any{"any_group": []string{"ops"}},
		"config": map[string]any{"operation": map[string]any{"static_patch": map[string]any{"status": "escalated"}}}})
	run := func(sub, name string, groups []string) string {
		t.Helper()
		b := browserClient(t)
		s.idp.QueueUser(&mockoidc.MockUser{Subject: sub, PreferredUsername: name, Groups: groups})
		if resp, _ := get(t, b, ui+"/auth/login"); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s's sign-in: %d", name, resp.StatusCode)
		}
		_, page := get(t, b, ui+"/actions/escalate?target="+w.plain)
		m := csrfRE.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s's action page:\n%s", name, page)
		}
		return postForm(t, b, ui+"/actions/escalate/run", m[1], url.Values{"target_object_id": {w.plain}})
	}
	if body := run("sub-gina", "gina", []string{"staff", "ops"}); !strings.Contains(body, `id="run-status">succeeded`) {
		t.Errorf("a member of ops:\n%s", body)
	}
	if body := run("sub-hal", "hal", []string{"staff"}); strings.Contains(body, "succeeded") || !strings.Contains(body, "ops") {
		t.Errorf("not a member of ops:\n%s", body)
	}
}

// movingUser is a provider account whose groups change while its session
// at the provider lives on (what an administrator's edit at the IdP does).
type movingUser struct {
	mu sync.Mutex
	u  mockoidc.MockUser
}

func (m *movingUser) snapshot() *mockoidc.MockUser {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.u
	c.Groups = append([]string(nil), m.u.Groups...)
	return &c
}

func (m *movingUser) setGroups(g ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.u.Groups = g
}

func (m *movingUser) ID() string                              { return m.snapshot().ID() }
func (m *movingUser) Userinfo(scope []string) ([]byte, error) { return m.snapshot().Userinfo(scope) }
func (m *movingUser) Claims(scope []string, c *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	return m.snapshot().Claims(scope, c)
}

// A console session begun at the provider lasts as long as the provider
// vouches for it (issue 47 items 1 and 2): when its ID token expires (made
// due here by moving its check time), the next request refreshes it and
// maps the new claims; a refresh whose claims no longer admit the user,
// or that the provider refuses, ends the session there.
func TestConsoleOIDCSessionFollowsTheProvider(t *testing.T) {
	s := startOIDCStack(t)
	ui := s.base + "/ui"
	due := func() {
		t.Helper()
		if err := s.app.DB.Model(&models.IdPSession{}).Where("1 = 1").Update("check_at", time.Now().Add(-time.Minute)).Error; err != nil {
			t.Fatal(err)
		}
	}
	signedIn := func(b *http.Client) bool {
		resp, _ := get(t, b, ui+"/account")
		return resp.StatusCode == http.StatusOK && resp.Request.URL.Path == "/ui/account"
	}
	gail := &movingUser{u: mockoidc.MockUser{Subject: "sub-gail", PreferredUsername: "gail", Groups: []string{"staff"}}}
	b := browserClient(t)
	s.idp.QueueUser(gail)
	get(t, b, ui+"/auth/login")
	if !signedIn(b) {
		t.Fatal("gail is not signed in")
	}
	var sess models.IdPSession
	if err := s.app.DB.Take(&sess).Error; err != nil || sess.Refresh == "" || strings.Contains(sess.Refresh, ".") {
		t.Fatalf("the provider's session is not kept, or its refresh token is kept in the clear: %+v %v", sess, err)
	}

	due()
	if !signedIn(b) {
		t.Fatal("a refreshed session ended")
	}
	if err := s.app.DB.Take(&sess).Error; err != nil || !sess.CheckAt.After(time.Now()) {
		t.Fatalf("the refreshed session's next check: %+v %v", sess, err)
	}

	gail.setGroups("admins") // out of the required group at the provider
	due()
	if signedIn(b) {
		t.Fatal("the session of a user the provider no longer admits goes on")
	}

	// The provider refuses the refresh (its session is gone: here its
	// signing key changed, so it no longer honours its refresh tokens).
	gail.setGroups("staff")
	c := browserClient(t)
	s.idp.QueueUser(gail)
	get(t, c, ui+"/auth/login")
	if !signedIn(c) {
		t.Fatal("gail is not signed in again")
	}
	kp, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	s.idp.Keypair = kp
	due()
	if signedIn(c) {
		t.Fatal("a session whose refresh the provider refused goes on")
	}
}
