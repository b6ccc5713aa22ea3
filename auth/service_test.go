package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/users"
)

func addUser(t *testing.T, db *gorm.DB, name, pw string, disabled bool) *models.User {
	t.Helper()
	st := &users.Store{DB: db, Levels: auth.DefaultLevels}
	u, err := st.Create(context.Background(), users.Spec{Username: &name, Password: &pw, Disabled: &disabled})
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	return u
}

func basicRequest(user, pass string) *http.Request {
	r := httptest.NewRequest("GET", "/api/v1/me", nil)
	r.SetBasicAuth(user, pass)
	return r
}

func bearerRequest(tok string) *http.Request {
	r := httptest.NewRequest("GET", "/api/v1/me", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

func wantUnauthorized(t *testing.T, what string, p *auth.Principal, err error) {
	t.Helper()
	if p != nil || !apperr.Is(err, apperr.Unauthorized) {
		t.Errorf("%s: got principal %v, err %v; want Unauthorized", what, p, err)
	}
}

func TestBasic(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		s := auth.NewService(db, auth.Options{})
		addUser(t, db, "alice", "alice-password", false)
		addUser(t, db, "dora", "dora-password", true)

		p, err := s.Authenticate(basicRequest("alice", "alice-password"))
		if err != nil || p.User.Username != "alice" || p.Method != "basic" || p.Guest {
			t.Fatalf("alice: %+v, %v", p, err)
		}
		// A second request is served from the verification cache and must
		// give the same answer.
		if p, err := s.Authenticate(basicRequest("alice", "alice-password")); err != nil || p.User.Username != "alice" {
			t.Fatalf("alice (cached): %+v, %v", p, err)
		}
		p, err = s.Authenticate(basicRequest("alice", "wrong"))
		wantUnauthorized(t, "wrong password", p, err)
		p, err = s.Authenticate(basicRequest("nobody", "alice-password"))
		wantUnauthorized(t, "unknown user", p, err)
		p, err = s.Authenticate(basicRequest("dora", "dora-password"))
		wantUnauthorized(t, "disabled user", p, err)
		p, err = s.Authenticate(httptest.NewRequest("GET", "/", nil))
		wantUnauthorized(t, "no header", p, err)
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Basic !!!not-base64")
		p, err = s.Authenticate(r)
		wantUnauthorized(t, "malformed basic", p, err)
		p, err = s.Authenticate(basicRequest(strings.Repeat("x", 300), "p"))
		wantUnauthorized(t, "oversized username", p, err)
	})
}

// A changed password or a disabled flag takes effect at once, even though
// the old password's verification is cached.
func TestCacheDropsOnChange(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{})
		addUser(t, db, "alice", "alice-password", false)
		if _, err := s.Authenticate(basicRequest("alice", "alice-password")); err != nil {
			t.Fatal(err)
		}
		st := &users.Store{DB: db, Levels: auth.DefaultLevels}
		newPW := "another-password"
		if _, err := st.Update(ctx, "alice", users.Spec{Password: &newPW}); err != nil {
			t.Fatal(err)
		}
		p, err := s.Authenticate(basicRequest("alice", "alice-password"))
		wantUnauthorized(t, "old password after change", p, err)
		if _, err := s.Authenticate(basicRequest("alice", newPW)); err != nil {
			t.Fatalf("new password: %v", err)
		}
		yes := true
		if _, err := st.Update(ctx, "alice", users.Spec{Disabled: &yes}); err != nil {
			t.Fatal(err)
		}
		p, err = s.Authenticate(basicRequest("alice", newPW))
		wantUnauthorized(t, "disabled after cached success", p, err)
	})
}

func TestTokens(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{})
		u := addUser(t, db, "alice", "alice-password", false)
		other := addUser(t, db, "bob", "bob-password", false)

		secret, tok, err := s.IssueToken(ctx, u, "cli", time.Hour, false)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, auth.TokenPrefix) {
			t.Errorf("token %q lacks prefix", secret)
		}
		var stored models.APIToken
		if err := db.Take(&stored, "id = ?", tok.ID).Error; err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stored.SecretHash, secret) || stored.SecretHash == secret {
			t.Errorf("token secret stored in clear")
		}
		p, err := s.Authenticate(bearerRequest(secret))
		if err != nil || p.User.ID != u.ID || p.TokenID != tok.ID || p.Guest || p.Method != "bearer" {
			t.Fatalf("bearer: %+v, %v", p, err)
		}

		guestSecret, _, err := s.IssueToken(ctx, u, "guest", time.Hour, true)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := s.Authenticate(bearerRequest(guestSecret)); err != nil || !p.Guest {
			t.Fatalf("guest token: %+v, %v", p, err)
		}

		// Someone else cannot revoke alice's token; alice can.
		if err := s.RevokeToken(ctx, &auth.Principal{User: other}, tok.ID); !apperr.Is(err, apperr.TokenNotFound) {
			t.Errorf("revoke by another user: %v", err)
		}
		if err := s.RevokeToken(ctx, &auth.Principal{User: u}, tok.ID); err != nil {
			t.Fatal(err)
		}
		p, err = s.Authenticate(bearerRequest(secret))
		wantUnauthorized(t, "revoked token", p, err)
		if err := s.RevokeToken(ctx, &auth.Principal{User: u}, tok.ID); !apperr.Is(err, apperr.TokenNotFound) {
			t.Errorf("second revoke: %v", err)
		}

		expired, _, err := s.IssueToken(ctx, u, "short", -time.Second, false)
		if err != nil {
			t.Fatal(err)
		}
		p, err = s.Authenticate(bearerRequest(expired))
		wantUnauthorized(t, "expired token", p, err)

		for _, bad := range []string{"", "oft_", "not-a-token", auth.TokenPrefix + strings.Repeat("a", 300)} {
			p, err = s.Authenticate(bearerRequest(bad))
			wantUnauthorized(t, "bad token "+bad, p, err)
		}

		// A password change revokes every older token.
		live, _, err := s.IssueToken(ctx, u, "live", time.Hour, false)
		if err != nil {
			t.Fatal(err)
		}
		st := &users.Store{DB: db, Levels: auth.DefaultLevels}
		pw := "changed-password"
		if _, err := st.Update(ctx, u.ID, users.Spec{Password: &pw}); err != nil {
			t.Fatal(err)
		}
		p, err = s.Authenticate(bearerRequest(live))
		wantUnauthorized(t, "token after password change", p, err)
	})
}

func TestPasswordHash(t *testing.T) {
	h, err := auth.HashPassword("s3cret-pass")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$") || strings.Contains(h, "s3cret-pass") {
		t.Fatalf("hash %q", h)
	}
	if ok, err := auth.VerifyPassword(h, "s3cret-pass"); !ok || err != nil {
		t.Errorf("verify right password: %v %v", ok, err)
	}
	if ok, err := auth.VerifyPassword(h, "s3cret-pasS"); ok || err != nil {
		t.Errorf("verify wrong password: %v %v", ok, err)
	}
	h2, _ := auth.HashPassword("s3cret-pass")
	if h == h2 {
		t.Errorf("two hashes of one password are equal: salt missing")
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$AAAA$AAAA", "$argon2id$v=1$m=1,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=x$AAAA$AAAA", "$argon2id$v=19$m=1,t=1,p=1$!!$AAAA"} {
		if ok, err := auth.VerifyPassword(bad, "x"); ok || err == nil {
			t.Errorf("malformed hash %q: ok=%v err=%v", bad, ok, err)
		}
	}
}

func TestHasPermission(t *testing.T) {
	mk := func(roles, perms []string) *models.User {
		return &models.User{Roles: models.NewJSON(roles), Permissions: models.NewJSON(perms)}
	}
	cases := []struct {
		name string
		u    *models.User
		key  string
		want bool
	}{
		{"nil user", nil, "ontology:write", false},
		{"exact", mk(nil, []string{"ontology:write"}), "ontology:write", true},
		{"other verb", mk(nil, []string{"ontology:read"}), "ontology:write", false},
		{"resource wildcard", mk(nil, []string{"ontology:*"}), "ontology:write", true},
		{"resource wildcard other resource", mk(nil, []string{"users:*"}), "ontology:write", false},
		{"all", mk(nil, []string{"*:*"}), "users:admin", true},
		{"star", mk(nil, []string{"*"}), "users:admin", true},
		{"case sensitive", mk(nil, []string{"Ontology:Write"}), "ontology:write", false},
		{"admin role", mk([]string{"admin"}, nil), "anything:at-all", true},
		{"other role", mk([]string{"analyst"}, nil), "ontology:write", false},
		{"prefix is not a wildcard", mk(nil, []string{"onto:*"}), "ontology:write", false},
	}
	for _, c := range cases {
		if got := auth.HasPermission(c.u, c.key); got != c.want {
			t.Errorf("%s: HasPermission(%q) = %v, want %v", c.name, c.key, got, c.want)
		}
	}
}

func TestLevels(t *testing.T) {
	ls := auth.DefaultLevels
	if !ls.Dominates("pii", "confidential") || !ls.Dominates("public", "public") || ls.Dominates("public", "pii") {
		t.Error("Dominates order wrong")
	}
	if ls.Dominates("secret", "public") || ls.Dominates("pii", "secret") {
		t.Error("unknown levels must never dominate or be dominated")
	}
	if err := ls.Check("clearance", "secret"); err == nil || !strings.Contains(err.Error(), "clearance") {
		t.Errorf("Check unknown level: %v", err)
	}
	if ls.Lowest() != "public" {
		t.Errorf("Lowest = %q", ls.Lowest())
	}
}

// A bearer token's last_used_at is written on use, at most once per
// LastUsedEvery: not again on the next request, but again once the stored
// value is older than that.
func TestTokenLastUsedAt(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{})
		u := addUser(t, db, "alice", "alice-password", false)
		secret, tok, err := s.IssueToken(ctx, u, "cli", time.Hour, false)
		if err != nil {
			t.Fatal(err)
		}
		load := func() *time.Time {
			t.Helper()
			var got models.APIToken
			if err := db.Take(&got, "id = ?", tok.ID).Error; err != nil {
				t.Fatal(err)
			}
			return got.LastUsedAt
		}
		if load() != nil {
			t.Fatal("a new token has last_used_at set")
		}
		before := time.Now().Add(-time.Second)
		if _, err := s.Authenticate(bearerRequest(secret)); err != nil {
			t.Fatal(err)
		}
		first := load()
		if first == nil || first.Before(before) || first.After(time.Now().Add(time.Second)) {
			t.Fatalf("last_used_at after the first use = %v, want about now", first)
		}
		for i := 0; i < 3; i++ {
			if _, err := s.Authenticate(bearerRequest(secret)); err != nil {
				t.Fatal(err)
			}
		}
		if again := load(); again == nil || !again.Equal(*first) {
			t.Fatalf("last_used_at rewritten within %s: %v, then %v", auth.LastUsedEvery, first, again)
		}
		old := time.Now().Add(-auth.LastUsedEvery - time.Minute).UTC().Truncate(time.Millisecond) // both dialects keep this precision
		if err := db.Model(&models.APIToken{}).Where("id = ?", tok.ID).Update("last_used_at", old).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(bearerRequest(secret)); err != nil {
			t.Fatal(err)
		}
		if got := load(); got == nil || !got.After(old.Add(time.Minute)) {
			t.Fatalf("last_used_at older than %s was not refreshed: %v", auth.LastUsedEvery, got)
		}
		// A refused token (revoked) is not marked used.
		if err := s.RevokeToken(ctx, &auth.Principal{User: u}, tok.ID); err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.APIToken{}).Where("id = ?", tok.ID).Update("last_used_at", old).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(bearerRequest(secret)); err == nil {
			t.Fatal("revoked token accepted")
		}
		if got := load(); got == nil || !got.Equal(old) {
			t.Fatalf("a refused use changed last_used_at to %v", got)
		}
	})
}

func basicFrom(user, pass, addr string) *http.Request {
	r := basicRequest(user, pass)
	r.RemoteAddr = addr + ":40000"
	return r
}

// Parallel wrong guesses cannot outrun the throttle: with a limit of 3
// only 3 of 40 concurrent guesses are verified, the rest are refused with
// TooManyRequests; while the username is over the limit even the right
// password is refused (a success must not tell a guesser it was right).
func TestBasicThrottleParallelGuesses(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	s := auth.NewService(db, auth.Options{ThrottleAfter: 3})
	frozen := time.Now()
	auth.SetClock(s, func() time.Time { return frozen }) // windows never pass
	addUser(t, db, "alice", "alice-password", false)

	const n = 40
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			_, err := s.Authenticate(basicFrom("alice", fmt.Sprintf("guess-%d", i), fmt.Sprintf("10.0.%d.%d", i/200, i%200)))
			errs <- err
		}(i)
	}
	codes := map[apperr.Code]int{}
	for i := 0; i < n; i++ {
		codes[apperr.CodeOf(<-errs)]++
	}
	if codes[apperr.Unauthorized] != 3 || codes[apperr.TooManyRequests] != n-3 {
		t.Fatalf("40 parallel guesses: %v; want exactly 3 verified (Unauthorized), the rest TooManyRequests", codes)
	}
	_, err := s.Authenticate(basicFrom("alice", "alice-password", "10.9.9.9"))
	te, ok := auth.AsThrottled(err)
	if !ok || !apperr.Is(err, apperr.TooManyRequests) || te.RetryAfter <= 0 {
		t.Fatalf("right password while over the limit: %v; want TooManyRequests with a retry time", err)
	}
	// Another user from a clean address is unaffected.
	addUser(t, db, "bob", "bob-password", false)
	if _, err := s.Authenticate(basicFrom("bob", "bob-password", "10.8.8.8")); err != nil {
		t.Fatalf("bob: %v", err)
	}
}

// A client's parallel requests with the right (not yet cached) password
// are one verification: none of them is refused, even with a low limit.
func TestBasicParallelSameCredentials(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	s := auth.NewService(db, auth.Options{ThrottleAfter: 2})
	addUser(t, db, "alice", "alice-password", false)
	const n = 24
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			_, err := s.Authenticate(basicFrom("alice", "alice-password", "10.0.0.1"))
			errs <- err
		}()
	}
	close(start)
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Errorf("parallel request with the right password: %v", err)
		}
	}
}

// A success clears the username's counter, not the address's: an attacker
// with one valid account cannot reset the address limit with it.
func TestBasicSuccessDoesNotClearAddress(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	s := auth.NewService(db, auth.Options{ThrottleAfter: 3, ThrottleAfterAddress: 3})
	frozen := time.Now()
	auth.SetClock(s, func() time.Time { return frozen })
	addUser(t, db, "mallory", "mallory-password", false)
	addUser(t, db, "victim", "victim-password", false)
	const addr = "192.0.2.7"
	for i := 0; i < 2; i++ {
		p, err := s.Authenticate(basicFrom("victim", fmt.Sprintf("guess-%d", i), addr))
		wantUnauthorized(t, "guess", p, err)
		if _, err := s.Authenticate(basicFrom("mallory", "mallory-password", addr)); err != nil {
			t.Fatalf("mallory's own login: %v", err)
		}
	}
	p, err := s.Authenticate(basicFrom("other", "guess-x", addr))
	wantUnauthorized(t, "third failure from the address", p, err)
	if _, err := s.Authenticate(basicFrom("victim", "guess-3", addr)); !apperr.Is(err, apperr.TooManyRequests) {
		t.Fatalf("fourth guess from the address after valid logins in between: %v; want TooManyRequests", err)
	}
	if _, err := s.Authenticate(basicFrom("mallory", "mallory-password", addr)); !apperr.Is(err, apperr.TooManyRequests) {
		t.Fatalf("valid login from an address over its limit: %v; want TooManyRequests", err)
	}
	// The victim from elsewhere: the username has 2 failures (under 3).
	if _, err := s.Authenticate(basicFrom("victim", "victim-password", "198.51.100.1")); err != nil {
		t.Fatalf("victim from another address: %v", err)
	}
}

// Basic reuses a user row for UserCacheTTL: a change made behind the
// service's back (another replica) is seen once the TTL is over, while a
// change through the users package (in-process) is seen at once.
func TestUserCache(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{UserCacheTTL: 2 * time.Second})
		clock := time.Now()
		auth.SetClock(s, func() time.Time { return clock })
		u := addUser(t, db, "alice", "alice-password", false)
		if _, err := s.Authenticate(basicRequest("alice", "alice-password")); err != nil {
			t.Fatal(err)
		}
		// Another replica disables alice: this one may serve its cached
		// row until the TTL is over, no longer.
		if err := db.Model(&models.User{}).Where("id = ?", u.ID).Update("disabled", true).Error; err != nil {
			t.Fatal(err)
		}
		if p, err := s.Authenticate(basicRequest("alice", "alice-password")); err != nil || p.User.Disabled {
			t.Fatalf("within the TTL the cached row is used: %+v, %v", p, err)
		}
		clock = clock.Add(2 * time.Second)
		p, err := s.Authenticate(basicRequest("alice", "alice-password"))
		wantUnauthorized(t, "disabled by another replica, after the TTL", p, err)

		// Through the users package the change counts at the next request.
		st := &users.Store{DB: db, Levels: auth.DefaultLevels}
		no := false
		if _, err := st.Update(ctx, "alice", users.Spec{Disabled: &no}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(basicRequest("alice", "alice-password")); err != nil {
			t.Fatalf("re-enabled: %v", err)
		}
		yes := true
		if _, err := st.Update(ctx, "alice", users.Spec{Disabled: &yes}); err != nil {
			t.Fatal(err)
		}
		p, err = s.Authenticate(basicRequest("alice", "alice-password"))
		wantUnauthorized(t, "disabled through users, within the TTL", p, err)
		if _, err := st.Update(ctx, "alice", users.Spec{Disabled: &no}); err != nil {
			t.Fatal(err)
		}
		org := "globex"
		if _, err := st.Update(ctx, "alice", users.Spec{Organization: &org}); err != nil {
			t.Fatal(err)
		}
		if p, err := s.Authenticate(basicRequest("alice", "alice-password")); err != nil || p.User.Organization != "globex" {
			t.Fatalf("updated organization not seen at once: %+v, %v", p, err)
		}
		// A principal's user is a copy: changing it does not change the cache.
		p, _ = s.Authenticate(basicRequest("alice", "alice-password"))
		p.User.Organization = "tampered"
		if p, _ := s.Authenticate(basicRequest("alice", "alice-password")); p.User.Organization != "globex" {
			t.Fatalf("cached row changed through a principal: %q", p.User.Organization)
		}
	})
}

// A negative UserCacheTTL reads the row on every request; the cache is
// bounded by UserCacheSize.
func TestUserCacheOffAndBounded(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	off := auth.NewService(db, auth.Options{UserCacheTTL: -1})
	u := addUser(t, db, "alice", "alice-password", false)
	if _, err := off.Authenticate(basicRequest("alice", "alice-password")); err != nil {
		t.Fatal(err)
	}
	if err := db.Model(&models.User{}).Where("id = ?", u.ID).Update("disabled", true).Error; err != nil {
		t.Fatal(err)
	}
	p, err := off.Authenticate(basicRequest("alice", "alice-password"))
	wantUnauthorized(t, "disabled, no user cache", p, err)
	if n := auth.UserCacheLen(off); n != 0 {
		t.Errorf("disabled cache holds %d rows", n)
	}

	small := auth.NewService(db, auth.Options{UserCacheSize: 2})
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("user%d", i)
		addUser(t, db, name, name+"-password", false)
		if _, err := small.Authenticate(basicRequest(name, name+"-password")); err != nil {
			t.Fatal(err)
		}
	}
	if n := auth.UserCacheLen(small); n != 2 {
		t.Errorf("cache of size 2 holds %d rows", n)
	}
}

// BenchmarkBasicCached is one Basic request whose password verification is
// cached (a WebDAV client's steady state), with and without the user-row
// cache: without it every request selects the user row.
func BenchmarkBasicCached(b *testing.B) {
	dialects := []string{"sqlite"}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		dialects = append(dialects, "postgres")
	}
	for _, d := range dialects {
		db := testdb.Open(b, d)
		name, pw := "alice", "alice-password"
		st := &users.Store{DB: db, Levels: auth.DefaultLevels}
		if _, err := st.Create(context.Background(), users.Spec{Username: &name, Password: &pw}); err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			ttl  time.Duration
		}{{"user-cache=off", -1}, {"user-cache=on", 0}} {
			b.Run(d+"/"+c.name, func(b *testing.B) {
				s := auth.NewService(db, auth.Options{UserCacheTTL: c.ttl})
				r := basicRequest(name, pw)
				if _, err := s.Authenticate(r); err != nil { // fills the caches
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.Authenticate(r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
