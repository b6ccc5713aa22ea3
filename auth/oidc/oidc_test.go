package oidc_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/auth/oidc"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/users"
)

// idp is a real OpenID provider (mockoidc) on loopback whose token
// endpoint can be made to answer with a crafted ID token.
type idp struct {
	*mockoidc.MockOIDC
	mu      sync.Mutex
	crafted func(nonce string) string
}

func startIdP(t *testing.T) *idp {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{MockOIDC: m}
	// The crafted token replaces the one the provider would issue, so
	// every check of Finish meets the token it is meant to refuse.
	err = m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			craft := p.crafted
			p.mu.Unlock()
			if craft == nil || r.URL.Path != mockoidc.TokenEndpoint {
				next.ServeHTTP(w, r)
				return
			}
			nonce := ""
			if err := r.ParseForm(); err == nil {
				if s, err := m.SessionStore.GetSessionByID(r.PostForm.Get("code")); err == nil {
					nonce = s.OIDCNonce
				}
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"access_token": "x", "token_type": "Bearer", "expires_in": 60,
				"id_token": craft(nonce)})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	return p
}

func (p *idp) craft(f func(nonce string) string) {
	p.mu.Lock()
	p.crafted = f
	p.mu.Unlock()
}

func newProvider(t *testing.T, m *idp, db *gorm.DB, mapping oidc.Mapping) *oidc.Provider {
	t.Helper()
	p, err := oidc.New(context.Background(), &users.Store{DB: db, Levels: auth.DefaultLevels}, auth.DefaultLevels, oidc.Config{
		Issuer: m.Issuer(), ClientID: m.ClientID, ClientSecret: m.ClientSecret,
		Scopes:      []string{"openid", "profile", "email", "groups"},
		RedirectURL: "http://127.0.0.1:1/ui/auth/callback", Mapping: mapping})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorize sends the browser's first hop to the provider and returns
// the code and state the provider redirects back with.
func authorize(t *testing.T, authURL string) (code, state string) {
	t.Helper()
	resp, err := noRedirect.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code"), loc.Query().Get("state")
}

func signIn(t *testing.T, p *oidc.Provider) (*oidc.Identity, error) {
	t.Helper()
	pd, u := p.Start("/ui/")
	code, state := authorize(t, u)
	return p.Finish(context.Background(), pd, state, code)
}

// The whole flow against the provider: a first sign-in creates the user
// from its claims, a later one with changed claims updates the same user
// (the subject is the key), and one outside the required group disables
// it, stopping its tokens; admitted again, it is enabled.
func TestSignInProvisionsAndMaps(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		m := startIdP(t)
		p := newProvider(t, m, db, oidc.Mapping{GroupsClaim: "groups", RequiredGroup: "staff",
			Roles: map[string][]string{"ops": {"operator", "viewer"}, "staff": {"viewer"}}})
		ctx := context.Background()
		m.QueueUser(&mockoidc.MockUser{Subject: "sub-1", PreferredUsername: "carol", Email: "carol@example.com", EmailVerified: true,
			Groups: []string{"staff", "ops"}})
		id, err := signIn(t, p)
		if err != nil {
			t.Fatal(err)
		}
		u, err := p.Provision(ctx, id)
		if err != nil || u.Username != "carol" || strings.Join(u.Roles.V, ",") != "operator,viewer" || u.Email != "carol@example.com" {
			t.Fatalf("first sign-in: %+v %v", u, err)
		}
		first := u.ID
		s := auth.NewService(db, auth.Options{})
		tok, _, err := s.IssueTokenFor(ctx, &auth.Principal{User: u}, "console", time.Hour, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Basic(ctx, "carol", "", "127.0.0.1"); err == nil {
			t.Error("an IdP user signed in with an empty account password")
		}

		// Renamed and moved out of ops: same user, fewer roles.
		m.QueueUser(&mockoidc.MockUser{Subject: "sub-1", PreferredUsername: "carol.b", Groups: []string{"staff"}})
		id, _ = signIn(t, p)
		u, err = p.Provision(ctx, id)
		if err != nil || u.ID != first || u.Username != "carol.b" || strings.Join(u.Roles.V, ",") != "viewer" {
			t.Fatalf("second sign-in: %+v %v", u, err)
		}
		if _, err := s.Bearer(ctx, tok, "127.0.0.1"); err != nil {
			t.Fatalf("token before removal: %v", err)
		}

		// Removed from the required group: refused and disabled.
		m.QueueUser(&mockoidc.MockUser{Subject: "sub-1", PreferredUsername: "carol.b", Groups: []string{"ops"}})
		id, _ = signIn(t, p)
		if _, err := p.Provision(ctx, id); !apperr.Is(err, apperr.PermissionDenied) {
			t.Fatalf("sign-in outside the required group: %v", err)
		}
		if _, err := s.Bearer(ctx, tok, "127.0.0.1"); !apperr.Is(err, apperr.Unauthorized) {
			t.Errorf("the disabled user's token still works: %v", err)
		}
		// A newcomer outside the group is not even created.
		m.QueueUser(&mockoidc.MockUser{Subject: "sub-2", PreferredUsername: "dave", Groups: []string{"ops"}})
		id, _ = signIn(t, p)
		if _, err := p.Provision(ctx, id); !apperr.Is(err, apperr.PermissionDenied) {
			t.Fatalf("newcomer outside the group: %v", err)
		}
		var n int64
		db.Model(&models.User{}).Where("username = ?", "dave").Count(&n)
		if n != 0 {
			t.Error("a user outside the required group was created")
		}
		// Admitted again: enabled again.
		m.QueueUser(&mockoidc.MockUser{Subject: "sub-1", PreferredUsername: "carol.b", Groups: []string{"staff"}})
		id, _ = signIn(t, p)
		if u, err := p.Provision(ctx, id); err != nil || u.Disabled {
			t.Fatalf("re-admitted: %+v %v", u, err)
		}
		// A local account of the same name is not taken over.
		m.QueueUser(&mockoidc.MockUser{Subject: "sub-3", PreferredUsername: "carol.b", Groups: []string{"staff"}})
		id, _ = signIn(t, p)
		if _, err := p.Provision(ctx, id); !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("another subject with a taken username: %v", err)
		}
	})
}

// unsigned is a JWT with alg "none".
func unsigned(claims map[string]any) string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	b, _ := json.Marshal(claims)
	return h + "." + base64.RawURLEncoding.EncodeToString(b) + "."
}

// Every forged or stale answer is refused at the callback: a state that
// is not the pending one, a nonce that is not, an ID token for another
// audience, expired, not yet valid, unsigned (alg none) or signed by a key
// the provider's JWKS does not hold; a key the provider rotated to is
// fetched and accepted.
func TestFinishRefusesForgeries(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	m := startIdP(t)
	p := newProvider(t, m, db, oidc.Mapping{})
	ctx := context.Background()

	t.Run("state mismatch", func(t *testing.T) {
		pd, u := p.Start("/ui/")
		code, state := authorize(t, u)
		if _, err := p.Finish(ctx, pd, state+"x", code); !oidc.IsRefused(err) || !apperr.Is(err, apperr.Unauthorized) {
			t.Errorf("state mismatch: %v", err)
		}
	})
	t.Run("nonce mismatch and replay", func(t *testing.T) {
		pd, u := p.Start("/ui/")
		code, state := authorize(t, u)
		other := pd
		other.Nonce = "another-sign-in's-nonce"
		if _, err := p.Finish(ctx, other, state, code); !oidc.IsRefused(err) || !strings.Contains(err.Error(), "nonce") {
			t.Errorf("nonce mismatch: %v", err)
		}
		// The code was redeemed: replaying the callback is refused.
		if _, err := p.Finish(ctx, pd, state, code); !oidc.IsRefused(err) {
			t.Errorf("replayed code: %v", err)
		}
	})

	now := time.Now()
	claims := func(nonce string, mod func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": m.Issuer(), "aud": m.ClientID, "sub": "s", "nonce": nonce,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	signed := func(kp *mockoidc.Keypair, mod func(jwt.MapClaims)) func(string) string {
		return func(nonce string) string {
			s, err := kp.SignJWT(claims(nonce, mod))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	stranger, _ := mockoidc.RandomKeypair(2048)
	cases := []struct {
		name  string
		token func(string) string
		ok    bool
	}{
		{"valid", signed(m.Keypair, nil), true},
		{"wrong audience", signed(m.Keypair, func(c jwt.MapClaims) { c["aud"] = "someone-else" }), false},
		{"wrong issuer", signed(m.Keypair, func(c jwt.MapClaims) { c["iss"] = "http://127.0.0.1:1/other" }), false},
		{"expired", signed(m.Keypair, func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }), false},
		{"not yet valid", signed(m.Keypair, func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }), false},
		{"alg none", func(n string) string { return unsigned(claims(n, nil)) }, false},
		{"unknown key", signed(stranger, nil), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m.craft(c.token)
			pd, u := p.Start("/ui/")
			code, state := authorize(t, u)
			id, err := p.Finish(ctx, pd, state, code)
			if c.ok != (err == nil) {
				t.Errorf("%s: %+v %v", c.name, id, err)
			}
		})
	}
	t.Run("rotated key", func(t *testing.T) {
		// The provider rotates its key: the new one is fetched from its JWKS.
		rotated, _ := mockoidc.RandomKeypair(2048)
		m.Keypair = rotated
		m.craft(signed(rotated, nil))
		pd, u := p.Start("/ui/")
		code, state := authorize(t, u)
		if _, err := p.Finish(ctx, pd, state, code); err != nil {
			t.Errorf("token signed with the rotated key: %v", err)
		}
	})
}

// LocalPath keeps the callback from redirecting anywhere but the console.
func TestLocalPathRefusesOpenRedirects(t *testing.T) {
	for in, want := range map[string]string{
		"/ui/actions/x?y=1":        "/ui/actions/x?y=1",
		"https://evil.example/ui/": "/ui/",
		"//evil.example/ui/":       "/ui/",
		"/ui/\\evil.example":       "/ui/",
		"/\\evil.example":          "/ui/",
		"/api/v1/me":               "/ui/",
		"":                         "/ui/",
		"javascript:alert(1)":      "/ui/",
		"/ui//evil.example":        "/ui//evil.example",
	} {
		if got := oidc.LocalPath(in); got != want {
			t.Errorf("LocalPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// Bearer JWTs from the provider on the API: the subject is the user of
// the console's sign-in (a new subject is provisioned), and every forged
// or stale token is refused as a bad token is.
func TestBearerJWT(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		m := startIdP(t)
		p := newProvider(t, m, db, oidc.Mapping{Roles: map[string][]string{"ops": {"operator"}}})
		s := auth.NewService(db, auth.Options{})
		s.SetJWTVerifier(p.VerifyBearer)
		ctx := context.Background()
		m.QueueUser(&mockoidc.MockUser{Subject: "sub-9", PreferredUsername: "frank", Groups: []string{"ops"}})
		id, err := signIn(t, p)
		if err != nil {
			t.Fatal(err)
		}
		frank, err := p.Provision(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		token := func(kp *mockoidc.Keypair, mod func(jwt.MapClaims)) string {
			c := jwt.MapClaims{"iss": m.Issuer(), "aud": m.ClientID, "sub": "sub-9", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
			if mod != nil {
				mod(c)
			}
			if kp == nil {
				return unsigned(c)
			}
			s, err := kp.SignJWT(c)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		authn := func(tok string) (*auth.Principal, error) {
			r, _ := http.NewRequest("GET", "http://127.0.0.1/api/v1/me", nil)
			r.RemoteAddr = "127.0.0.1:1"
			r.Header.Set("Authorization", "Bearer "+tok)
			return s.Authenticate(r)
		}
		pr, err := authn(token(m.Keypair, nil))
		if err != nil || pr.User.ID != frank.ID || pr.Method != "jwt" {
			t.Fatalf("valid JWT: %+v %v", pr, err)
		}
		stranger, _ := mockoidc.RandomKeypair(2048)
		for name, tok := range map[string]string{
			"wrong audience": token(m.Keypair, func(c jwt.MapClaims) { c["aud"] = "another-api" }),
			"expired":        token(m.Keypair, func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }),
			"not yet valid":  token(m.Keypair, func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }),
			"alg none":       token(nil, nil),
			"unknown key":    token(stranger, nil),
		} {
			if pr, err := authn(tok); !apperr.Is(err, apperr.Unauthorized) {
				t.Errorf("%s: %+v %v", name, pr, err)
			}
		}
		// A subject never seen, with a username claim: provisioned.
		pr, err = authn(token(m.Keypair, func(c jwt.MapClaims) { c["sub"] = "svc-1"; c["preferred_username"] = "ci-bot" }))
		if err != nil || pr.User.Username != "ci-bot" {
			t.Fatalf("service account JWT: %+v %v", pr, err)
		}
		// A disabled user's JWT is refused.
		db.Model(&models.User{}).Where("id = ?", frank.ID).Update("disabled", true)
		auth.UsersChanged()
		if pr, err := authn(token(m.Keypair, nil)); !apperr.Is(err, apperr.Unauthorized) {
			t.Errorf("disabled user's JWT: %+v %v", pr, err)
		}
	})
}

// Every bearer JWT is mapped as a sign-in is (issue 47 item 2): its
// groups set the roles, a token outside the required group refuses the
// user and disables the account, so their app passwords stop too, and a
// later admitted token enables it again. A token whose claims change
// nothing writes nothing. A key the provider rotated to is fetched.
func TestBearerJWTMapsEveryToken(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		m := startIdP(t)
		p := newProvider(t, m, db, oidc.Mapping{RequiredGroup: "staff", Roles: map[string][]string{"ops": {"operator"}}})
		s := auth.NewService(db, auth.Options{})
		s.SetJWTVerifier(p.VerifyBearer)
		ctx := context.Background()
		kp := m.Keypair
		token := func(groups ...string) string {
			now := time.Now()
			c := jwt.MapClaims{"iss": m.Issuer(), "aud": m.ClientID, "sub": "sub-7", "preferred_username": "gina",
				"groups": groups, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
			tok, err := kp.SignJWT(c)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		authn := func(tok string) (*auth.Principal, error) {
			r, _ := http.NewRequest("GET", "http://127.0.0.1/api/v1/me", nil)
			r.RemoteAddr = "127.0.0.1:1"
			r.Header.Set("Authorization", "Bearer "+tok)
			return s.Authenticate(r)
		}
		pr, err := authn(token("staff", "ops"))
		if err != nil || !pr.User.HasRole("operator") {
			t.Fatalf("admitted token with the ops group: %+v %v", pr, err)
		}
		gina := pr.User
		pw, _, err := s.CreateAppPassword(ctx, &auth.Principal{User: gina, Method: "oidc"}, auth.AppPasswordSpec{Name: "drive"})
		if err != nil {
			t.Fatal(err)
		}
		drive := func() error {
			r, _ := http.NewRequest("PROPFIND", "http://127.0.0.1/webdav/", nil)
			r.RemoteAddr = "127.0.0.1:1"
			r.SetBasicAuth("gina", pw)
			_, err := s.AuthenticateWebDAV(r)
			return err
		}
		if err := drive(); err != nil {
			t.Fatalf("app password of an admitted user: %v", err)
		}
		updated := func() time.Time {
			var u models.User
			if err := db.Where("id = ?", gina.ID).Take(&u).Error; err != nil {
				t.Fatal(err)
			}
			return u.UpdatedAt
		}
		at := updated()
		time.Sleep(5 * time.Millisecond)
		if _, err := authn(token("staff", "ops")); err != nil || !updated().Equal(at) {
			t.Errorf("an unchanged token wrote the user (updated %v, was %v): %v", updated(), at, err)
		}
		if pr, err := authn(token("staff")); err != nil || pr.User.HasRole("operator") {
			t.Errorf("token without the ops group keeps the role: %+v %v", pr, err)
		}
		if pr, err := authn(token("ops")); !apperr.Is(err, apperr.Unauthorized) {
			t.Fatalf("token outside the required group: %+v %v", pr, err)
		}
		if err := drive(); !apperr.Is(err, apperr.Unauthorized) {
			t.Errorf("app password of a user the provider no longer admits: %v", err)
		}
		if _, err := authn(token("staff")); err != nil {
			t.Fatalf("admitted again: %v", err)
		}
		if err := drive(); err != nil {
			t.Errorf("app password after the provider admits the user again: %v", err)
		}
		rotated, err := mockoidc.RandomKeypair(2048)
		if err != nil {
			t.Fatal(err)
		}
		m.Keypair, kp = rotated, rotated
		if _, err := authn(token("staff")); err != nil {
			t.Errorf("token signed with the rotated key: %v", err)
		}
	})
}
