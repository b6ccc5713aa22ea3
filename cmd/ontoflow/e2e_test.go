package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// devArgs runs `dev` on free ports with its state under dir.
func devArgs(dir string) []string {
	return []string{"dev", "--data-dir", dir, "--http-addr", "127.0.0.1:0",
		"--temporal-port", "0", "--ui-port", "0", "--log-level", "warn"}
}

// TestDevRestartKeepsState is the foundation's end-to-end check: `dev`
// brings up API, WebDAV, Temporal and its UI; authentication refuses what it
// must with 401 and the JSON body; SIGTERM stops it cleanly; a second start
// on the same data directory sees the same users, tokens and files and does
// not create the admin again.
func TestDevRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	p := start(t, nil, devArgs(dir)...)
	if p.APIURL == "" || p.TemporalAddr == "" || p.UIURL == "" {
		t.Fatalf("banner lacks API, Temporal or UI address:\n%s", p.stdout)
	}
	if p.AdminPassword == "" {
		t.Fatalf("first start did not print the generated admin password:\n%s", p.stdout)
	}
	for _, u := range []string{p.APIURL, p.UIURL} {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("%s is not bound to 127.0.0.1", u)
		}
	}
	if !strings.HasPrefix(p.TemporalAddr, "127.0.0.1:") {
		t.Errorf("temporal frontend %s is not bound to 127.0.0.1", p.TemporalAddr)
	}

	waitHTTP(t, p.APIURL+"/healthz")
	waitHTTP(t, p.APIURL+"/readyz")
	ui := waitHTTP(t, p.UIURL+"/")
	if !strings.Contains(strings.ToLower(string(ui.Body)), "<html") {
		t.Errorf("Temporal UI did not answer with a page: %.200s", ui.Body)
	}

	admin := client{t: t, base: p.APIURL, user: "admin", pass: p.AdminPassword}
	admin.must(http.StatusOK, "GET", "/api/v1/me", nil)

	// Users: one enabled, one disabled.
	admin.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{
		"username": "bob", "password": "bob-password-1", "roles": []string{"analyst"},
		"permissions": []string{"ontology:read"}, "clearance": "confidential", "organization": "acme",
		"attributes": map[string]any{"region": "eu"},
	})
	admin.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{
		"username": "carol", "password": "carol-password-1", "disabled": true,
	})

	// Refusals: each is 401 with WWW-Authenticate and the JSON error body.
	refusals := map[string]client{
		"no credentials": {t: t, base: p.APIURL},
		"wrong password": {t: t, base: p.APIURL, user: "bob", pass: "wrong-password"},
		"unknown user":   {t: t, base: p.APIURL, user: "nobody", pass: "whatever-1"},
		"disabled user":  {t: t, base: p.APIURL, user: "carol", pass: "carol-password-1"},
		"garbage bearer": {t: t, base: p.APIURL, bearer: "oft_not-a-token"},
	}
	for name, c := range refusals {
		r := c.do("GET", "/api/v1/me", nil)
		if r.Status != http.StatusUnauthorized || r.errorCode() != "Unauthorized" ||
			!strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("%s: got %d %q (WWW-Authenticate %q), want 401 Unauthorized with a Basic challenge",
				name, r.Status, r.Body, r.Header.Get("WWW-Authenticate"))
		}
	}

	bob := client{t: t, base: p.APIURL, user: "bob", pass: "bob-password-1"}
	var me struct {
		User struct {
			Username     string `json:"username"`
			Clearance    string `json:"clearance"`
			Organization string `json:"organization"`
		} `json:"user"`
		Guest bool `json:"guest"`
	}
	bob.must(http.StatusOK, "GET", "/api/v1/me", nil).json(t, &me)
	if me.User.Username != "bob" || me.User.Clearance != "confidential" || me.User.Organization != "acme" || me.Guest {
		t.Errorf("/me as bob = %+v", me)
	}

	// Tokens: a long-lived one that must survive the restart, a guest
	// session, a revoked one and an expired one.
	var tok struct {
		Token string `json:"token"`
		Info  struct {
			ID string `json:"id"`
		} `json:"token_info"`
	}
	bob.must(http.StatusCreated, "POST", "/api/v1/auth/tokens", map[string]any{"name": "keeper"}).json(t, &tok)
	keeper := tok.Token
	bob.must(http.StatusCreated, "POST", "/api/v1/auth/tokens", map[string]any{"name": "guest", "guest": true}).json(t, &tok)
	guest := client{t: t, base: p.APIURL, bearer: tok.Token}
	guest.must(http.StatusOK, "GET", "/api/v1/me", nil).json(t, &me)
	if !me.Guest {
		t.Errorf("a guest token authenticated as a non-guest session")
	}
	bob.must(http.StatusCreated, "POST", "/api/v1/auth/tokens", map[string]any{"name": "revoked"}).json(t, &tok)
	revoked := client{t: t, base: p.APIURL, bearer: tok.Token}
	revoked.must(http.StatusOK, "GET", "/api/v1/me", nil)
	bob.must(http.StatusNoContent, "DELETE", "/api/v1/auth/tokens/"+tok.Info.ID, nil)
	if r := revoked.do("GET", "/api/v1/me", nil); r.Status != http.StatusUnauthorized || r.errorCode() != "Unauthorized" {
		t.Errorf("revoked token: %d %s, want 401", r.Status, r.Body)
	}
	bob.must(http.StatusCreated, "POST", "/api/v1/auth/tokens", map[string]any{"name": "short", "ttl_seconds": 1}).json(t, &tok)
	expiring := client{t: t, base: p.APIURL, bearer: tok.Token}
	time.Sleep(1500 * time.Millisecond)
	if r := expiring.do("GET", "/api/v1/me", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("expired token: %d %s, want 401", r.Status, r.Body)
	}

	// Bad input on the foundation's routes.
	if r := admin.do("POST", "/api/v1/users", `{"username":`); r.Status != http.StatusBadRequest || r.errorCode() != "InvalidJSON" {
		t.Errorf("truncated JSON: %d %s", r.Status, r.Body)
	}
	if r := bob.do("POST", "/api/v1/users", map[string]any{"username": "eve", "password": "eve-password-1"}); r.Status != http.StatusForbidden {
		t.Errorf("user creation without users:admin: %d %s", r.Status, r.Body)
	}
	if r := admin.do("GET", "/api/v1/no-such-route", nil); r.Status != http.StatusNotFound || r.errorCode() == "" {
		t.Errorf("unknown route: %d %s", r.Status, r.Body)
	}

	// A WebDAV file for bob.
	bob.must(http.StatusCreated, "PUT", "/webdav/notes.txt", "kept across restarts")

	// Graceful shutdown: an upload in flight when SIGTERM arrives finishes.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("PUT", p.APIURL+"/webdav/in-flight.txt", pr)
	req.SetBasicAuth("bob", "bob-password-1")
	req.ContentLength = 8
	status := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	if _, err := pw.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the request is now being served
	p.terminate()
	time.Sleep(300 * time.Millisecond)
	if _, err := pw.Write([]byte("done")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if s := <-status; s != http.StatusCreated {
		t.Errorf("upload in flight during SIGTERM answered %d, want 201", s)
	}
	p.waitExit()
	for _, secret := range []string{"bob-password-1", "carol-password-1", keeper} {
		if strings.Contains(p.stderr.String(), secret) {
			t.Errorf("a secret appears in the logs: %q", secret)
		}
	}

	// Second start on the same data directory.
	p2 := start(t, nil, devArgs(dir)...)
	if p2.AdminPassword != "" || strings.Contains(p2.stdout.String(), "Created user") {
		t.Errorf("second start created the admin user again:\n%s", p2.stdout)
	}
	waitHTTP(t, p2.APIURL+"/readyz")
	admin.base, bob.base = p2.APIURL, p2.APIURL
	admin.must(http.StatusOK, "GET", "/api/v1/users/bob", nil)
	bob.must(http.StatusOK, "GET", "/api/v1/me", nil)
	kept := client{t: t, base: p2.APIURL, bearer: keeper}
	kept.must(http.StatusOK, "GET", "/api/v1/me", nil)
	if r := (client{t: t, base: p2.APIURL, user: "carol", pass: "carol-password-1"}).do("GET", "/api/v1/me", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("disabled user after restart: %d", r.Status)
	}
	if got := string(bob.must(http.StatusOK, "GET", "/webdav/notes.txt", nil).Body); got != "kept across restarts" {
		t.Errorf("WebDAV file after restart = %q", got)
	}
	if got := string(bob.must(http.StatusOK, "GET", "/webdav/in-flight.txt", nil).Body); got != "halfdone" {
		t.Errorf("upload finished during shutdown = %q", got)
	}
	p2.stop()
	// A clean stop reads as one: the embedded Temporal server's shutdown
	// noise (28 WARN/ERROR lines before) is demoted to debug.
	for i, out := range []string{p.stderr.String(), p2.stderr.String()} {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "level=ERROR") {
				t.Errorf("start %d logged an ERROR around a clean SIGTERM: %s", i+1, line)
			}
		}
	}
}

// TestServeAndWorkerOnExternalTemporal runs the production shape: `serve` and
// `worker` processes against DATABASE_URL (Postgres when TEST_DATABASE_URL
// is set, else a SQLite file) and an external Temporal frontend, played by a
// `dev` process's embedded server over gRPC on loopback.
func TestServeAndWorkerOnExternalTemporal(t *testing.T) {
	dialect := testdb.Dialects()[len(testdb.Dialects())-1]
	dsn := testdb.DSN(t, dialect)
	temporal := start(t, nil, devArgs(t.TempDir())...)

	// Migrations are idempotent and safe when replicas start at once.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	outs := make([]string, 3)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], errs[i] = ontoflow(t, "", nil, "migrate", "--database-url", dsn)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent migrate %d: %v\n%s", i, err, outs[i])
		}
	}

	out, err := ontoflow(t, "alice-password-1\n", nil, "users", "add", "alice", "--database-url", dsn,
		"--password-stdin", "--roles", "admin", "--clearance", "pii")
	if err != nil {
		t.Fatalf("users add: %v\n%s", err, out)
	}
	out, err = ontoflow(t, "", nil, "users", "list", "--database-url", dsn)
	if err != nil || !strings.Contains(out, "alice") {
		t.Fatalf("users list: %v\n%s", err, out)
	}

	env := []string{"DATABASE_URL=" + dsn, "TEMPORAL_ADDRESS=" + temporal.TemporalAddr,
		"ONTOFLOW_TASK_QUEUE=e2e-external", "ONTOFLOW_DATA_DIR=" + t.TempDir()}
	serve := start(t, env, "serve", "--http-addr", "127.0.0.1:0", "--log-level", "warn")
	worker := start(t, env, "worker", "--log-level", "warn", "--metrics-addr", "127.0.0.1:0")
	waitHTTP(t, serve.APIURL+"/readyz")

	alice := client{t: t, base: serve.APIURL, user: "alice", pass: "alice-password-1"}
	alice.must(http.StatusOK, "GET", "/api/v1/me", nil)
	if r := (client{t: t, base: serve.APIURL, user: "alice", pass: "nope-nope-nope"}).do("GET", "/api/v1/me", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("wrong password on serve: %d", r.Status)
	}
	alice.must(http.StatusCreated, "PUT", "/webdav/a.txt", "from serve")

	// The users command changes what the running replicas see.
	out, err = ontoflow(t, "", nil, "users", "update", "alice", "--database-url", dsn,
		"--permissions", "ontology:write", "--attributes", `{"region":"eu"}`, "--organization", "acme")
	if err != nil {
		t.Fatalf("users update: %v\n%s", err, out)
	}
	out, err = ontoflow(t, "", nil, "users", "show", "alice", "--database-url", dsn)
	if err != nil || !strings.Contains(out, `"region": "eu"`) || !strings.Contains(out, "ontology:write") || strings.Contains(out, "argon2") {
		t.Fatalf("users show: %v\n%s", err, out)
	}
	out, err = ontoflow(t, "alice-password-2\n", nil, "users", "passwd", "alice", "--database-url", dsn, "--password-stdin")
	if err != nil {
		t.Fatalf("users passwd: %v\n%s", err, out)
	}
	// Another process changed the row: the replica's user cache (2 s by
	// default, see --user-cache-ttl) lets the old password through for at
	// most that long.
	changed := time.Now()
	waitFor(t, 10*time.Second, func() bool { return alice.do("GET", "/api/v1/me", nil).Status == http.StatusUnauthorized })
	if d := time.Since(changed); d > 4*time.Second {
		t.Errorf("old password still accepted %v after passwd (user cache TTL 2 s)", d)
	}
	alice.pass = "alice-password-2"
	alice.must(http.StatusOK, "GET", "/api/v1/me", nil)
	if out, err := ontoflow(t, "", nil, "users", "update", "nobody", "--database-url", dsn, "--disabled", "true"); err == nil {
		t.Errorf("users update of an unknown user succeeded:\n%s", out)
	}

	worker.stop()
	serve.stop()
	temporal.stop()
}

// TestServeNeedsDatabaseURL: production mode refuses to start without its
// database rather than silently using a local file.
func TestServeNeedsDatabaseURL(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "x")
	out, err := ontoflow(t, "", []string{"DATABASE_URL="}, "serve", "--data-dir", dataDir)
	if err == nil || !strings.Contains(out, "DATABASE_URL") {
		t.Fatalf("serve without DATABASE_URL: err=%v\n%s", err, out)
	}
	if _, statErr := os.Stat(dataDir); statErr == nil {
		t.Errorf("serve created a data directory before failing")
	}
}
