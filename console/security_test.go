package console_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// client is a cookie-less HTTP client that does not follow redirects, so
// each answer can be checked as sent.
var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func send(t *testing.T, method, u string, form url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// TestConsoleSecurity checks the console's headers, its session cookie,
// CSRF refusals and that signing out revokes the session's token.
func TestConsoleSecurity(t *testing.T) {
	s := startStack(t)
	w := s.seed()
	base := s.base + "/ui"

	resp, _ := send(t, "GET", base+"/", nil, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Fatalf("unauthenticated GET /ui/: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = send(t, "GET", base+"/login", nil, nil)
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("CSP %q, X-Frame-Options %q", csp, resp.Header.Get("X-Frame-Options"))
	}

	resp, body := send(t, "POST", base+"/login", url.Values{"username": {"admin"}, "password": {"wrong"}}, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Wrong username or password") {
		t.Fatalf("wrong password: %d", resp.StatusCode)
	}
	resp, _ = send(t, "POST", base+"/login", url.Values{"username": {"admin"}, "password": {adminPassword}},
		map[string]string{"Origin": "http://evil.example"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin sign-in: %d", resp.StatusCode)
	}
	resp, _ = send(t, "POST", base+"/login", url.Values{"username": {"admin"}, "password": {adminPassword}}, nil)
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "ontoflow_session" {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui" || ck.Secure {
		t.Fatalf("session cookie: %+v (Set-Cookie %q)", ck, resp.Header.Values("Set-Cookie"))
	}
	cookie := map[string]string{"Cookie": "ontoflow_session=" + ck.Value}

	_, page := send(t, "GET", base+"/actions/triage?target="+w.plain, nil, cookie)
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the action page")
	}
	form := url.Values{"target_object_id": {w.plain}, "p.status": {"x"}}
	post := func(csrf, origin string) int {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		if csrf != "" {
			f.Set("csrf", csrf)
		}
		h := map[string]string{"Cookie": cookie["Cookie"]}
		if origin != "" {
			h["Origin"] = origin
		}
		resp, _ := send(t, "POST", base+"/actions/triage/form", f, h)
		return resp.StatusCode
	}
	if st := post("", ""); st != http.StatusForbidden {
		t.Errorf("POST without CSRF token: %d, want 403", st)
	}
	if st := post(strings.Repeat("0", 64), ""); st != http.StatusForbidden {
		t.Errorf("POST with a wrong CSRF token: %d, want 403", st)
	}
	if st := post(m[1], "http://evil.example"); st != http.StatusForbidden {
		t.Errorf("POST from another origin: %d, want 403", st)
	}
	if st := post(m[1], s.base); st != http.StatusOK {
		t.Errorf("POST from the page: %d, want 200", st)
	}

	resp, _ = send(t, "POST", base+"/logout", url.Values{"csrf": {m[1]}}, cookie)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d", resp.StatusCode)
	}
	if resp, _ = send(t, "GET", base+"/", nil, cookie); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the old cookie after sign-out: %d, want a redirect to sign in", resp.StatusCode)
	}
	if resp, _ = send(t, "GET", s.base+"/api/v1/me", nil, map[string]string{"Authorization": "Bearer " + ck.Value}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the session's token on the API after sign-out: %d, want 401", resp.StatusCode)
	}
}

// signIn signs in through the console's form and returns the session's
// Cookie header.
func signIn(t *testing.T, base, user, pw string) map[string]string {
	t.Helper()
	resp, _ := send(t, "POST", base+"/login", url.Values{"username": {user}, "password": {pw}}, nil)
	for _, c := range resp.Cookies() {
		if c.Name == "ontoflow_session" {
			return map[string]string{"Cookie": c.Name + "=" + c.Value}
		}
	}
	t.Fatalf("sign in as %s: %d, no session cookie", user, resp.StatusCode)
	return nil
}

func with(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

// TestConsoleReadRuleAndJustification checks that pickers list only
// objects the user may read, that an unreadable target is answered as a
// missing one, and that a policy's justification is asked for and
// enforced, with its message beside the field.
func TestConsoleReadRuleAndJustification(t *testing.T) {
	s := startStack(t)
	w := s.seed()
	base := s.base + "/ui"
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	viewer := signIn(t, base, "viewer", "viewer-password-1")

	s.create("/api/v1/ontology/actions", map[string]any{"name": "ops-only", "object_type_id": "Ticket",
		"operation_kind": "update_object", "policy": map[string]any{"any_role": []string{"ops"}},
		"config": map[string]any{"operation": map[string]any{"static_patch": map[string]any{"status": "x"}}}})
	_, body := send(t, "GET", base+"/", nil, viewer)
	if !strings.Contains(body, "Triage ticket") || strings.Contains(body, "ops-only") {
		t.Errorf("viewer's action list (only what the policy lets them run): %s", body)
	}
	_, body = send(t, "GET", base+"/actions/triage/targets?q=", nil, viewer)
	if !strings.Contains(body, "plain-1") || strings.Contains(body, "secret-1") || strings.Contains(body, w.secret) {
		t.Errorf("viewer's target list: %s", body)
	}
	_, body = send(t, "GET", base+"/objects/search?type=Ticket&name=p.dup&q=1", nil, viewer)
	if !strings.Contains(body, "vip-1") || strings.Contains(body, "secret-1") {
		t.Errorf("viewer's reference picker: %s", body)
	}
	_, body = send(t, "GET", base+"/actions/triage?target="+w.secret, nil, viewer)
	if !strings.Contains(body, "does not exist or you may not read it") || strings.Contains(body, "secret-1") {
		t.Errorf("viewer opening an unreadable target: %s", body)
	}
	if resp, _ := send(t, "GET", base+"/objects/Ticket/"+w.secret, nil, viewer); resp.StatusCode != http.StatusNotFound {
		t.Errorf("viewer's page of an unreadable object: %d", resp.StatusCode)
	}

	s.create("/api/v1/ontology/actions", map[string]any{"name": "reopen", "object_type_id": "Ticket",
		"operation_kind": "update_object", "policy": map[string]any{"confirmation_required": true},
		"config": map[string]any{"operation": map[string]any{"static_patch": map[string]any{"status": "open"}}}})
	admin := signIn(t, base, "admin", adminPassword)
	_, page := send(t, "GET", base+"/actions/reopen?target="+w.plain, nil, admin)
	m := csrfRE.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `id="justification"`) {
		t.Fatalf("reopen's form has no justification field: %s", page)
	}
	hdr := with(admin, "X-CSRF-Token", m[1])
	_, body = send(t, "POST", base+"/actions/reopen/run", url.Values{"target_object_id": {w.plain}}, hdr)
	// Refused as the API refuses it, and recorded as the API records it.
	if !strings.Contains(body, `id="justification-err"`) || !strings.Contains(body, "(JustificationRequired)") ||
		!strings.Contains(body, `id="run-status">failed`) {
		t.Errorf("run without justification: %s", body)
	}
	_, body = send(t, "POST", base+"/actions/reopen/run", url.Values{"target_object_id": {w.plain},
		"justification": {"customer called back"}}, hdr)
	if !strings.Contains(body, `id="run-status">succeeded`) {
		t.Errorf("run with justification: %s", body)
	}
}
