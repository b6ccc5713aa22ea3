// Package oidc signs users in to the console with an OpenID Connect
// identity provider: the authorization code flow with PKCE, state and
// nonce checked, the ID token verified against the provider's JWKS, and
// the user provisioned just in time and updated from its claims at every
// sign-in (Provision). It holds no session of its own: the console issues
// its usual session token for the user it returns.
package oidc

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
)

// Config is the provider's settings (flags --oidc-*, see config).
type Config struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	Scopes       []string
	// RedirectURL is {public-url}/ui/auth/callback, registered at the IdP.
	RedirectURL string
	// PostLogoutURL is where the IdP sends the browser after its own
	// sign-out (RP-initiated logout); empty: no redirect asked.
	PostLogoutURL string
	// Label names the provider on the sign-in button.
	Label string
	Mapping
}

// Provider is a discovered identity provider.
type Provider struct {
	cfg        Config
	oauth      oauth2.Config
	verifier   *gooidc.IDTokenVerifier
	endSession string
	client     *http.Client
	users      Users
	levels     auth.Levels
	sessions   Sessions // nil: sessions are not checked (TrackSessions)
	sealer     Sealer
}

// Users keeps the users the provider signs in (users.Store): it finds the
// one of an issuer and subject, lets apply set its fields and writes what
// changed.
type Users interface {
	SaveIdentity(ctx context.Context, issuer, subject string, apply func(u *models.User, isNew bool) error) (*models.User, error)
}

// discoveryTimeout bounds each call to the provider.
const discoveryTimeout = 10 * time.Second

// New discovers the provider at cfg.Issuer (its
// .well-known/openid-configuration, whose issuer must equal it).
func New(ctx context.Context, us Users, levels auth.Levels, cfg Config) (*Provider, error) {
	client := &http.Client{Timeout: discoveryTimeout}
	ctx = gooidc.ClientContext(ctx, client)
	op, err := gooidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover OpenID provider %s: %w", cfg.Issuer, err)
	}
	var meta struct {
		EndSession string `json:"end_session_endpoint"`
	}
	if err := op.Claims(&meta); err != nil {
		return nil, fmt.Errorf("read OpenID provider metadata: %w", err)
	}
	scopes := cfg.Scopes
	if len(scopes) == 0 {
		scopes = []string{gooidc.ScopeOpenID, "profile", "email"}
	}
	if cfg.Label == "" {
		cfg.Label = "your organization's account"
	}
	return &Provider{
		cfg: cfg,
		oauth: oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: op.Endpoint(),
			RedirectURL: cfg.RedirectURL, Scopes: scopes},
		// The signature algorithm is pinned to RS256 (go-oidc's default
		// when the list is empty is the provider's advertised algorithms;
		// "none" is never accepted by it).
		verifier:   op.Verifier(&gooidc.Config{ClientID: cfg.ClientID, SupportedSigningAlgs: []string{gooidc.RS256}}),
		endSession: meta.EndSession,
		client:     client,
		users:      us,
		levels:     levels,
	}, nil
}

// Label is what the sign-in button says after "Sign in with".
func (p *Provider) Label() string { return p.cfg.Label }

// Pending is a sign-in in progress, kept by the browser in a short-lived
// HttpOnly cookie between the redirect to the provider and its callback.
type Pending struct {
	State, Nonce, Verifier string
	// Return is the console path to land on (always a local path).
	Return string
}

// Start begins a sign-in: it returns the pending state to keep and the
// provider URL to send the browser to.
func (p *Provider) Start(returnTo string) (Pending, string) {
	pd := Pending{State: auth.RandomSecret(24), Nonce: auth.RandomSecret(24), Verifier: oauth2.GenerateVerifier(),
		Return: LocalPath(returnTo)}
	u := p.oauth.AuthCodeURL(pd.State, gooidc.Nonce(pd.Nonce), oauth2.S256ChallengeOption(pd.Verifier))
	return pd, u
}

// LocalPath keeps returnTo only when it is a path of the console itself:
// anything else (another host, a scheme, "//host", a backslash trick)
// becomes the console's home, so the callback is no open redirect.
func LocalPath(returnTo string) string {
	const home = "/ui/"
	if !strings.HasPrefix(returnTo, "/ui/") || strings.ContainsAny(returnTo, "\\\r\n\t") || strings.HasPrefix(returnTo, "//") {
		return home
	}
	u, err := url.Parse(returnTo)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return home
	}
	return u.RequestURI()
}

// ErrSignIn is every refusal of a callback; its reason is logged, not
// shown.
var ErrSignIn = apperr.New(apperr.Unauthorized, "sign-in with the identity provider failed; start again")

// Finish completes a sign-in from the provider's callback: state must be
// the pending one, the code is redeemed with the PKCE verifier, the ID
// token verified (signature, issuer, audience, expiry) and its nonce
// compared with the pending one; then the user is provisioned. The
// returned reason explains a refusal for the log.
func (p *Provider) Finish(ctx context.Context, pd Pending, state, code string) (*Identity, error) {
	if pd.State == "" || subtle.ConstantTimeCompare([]byte(state), []byte(pd.State)) != 1 {
		return nil, refused("state does not match the pending sign-in")
	}
	if code == "" {
		return nil, refused("no authorization code")
	}
	ctx = gooidc.ClientContext(ctx, p.client)
	tok, err := p.oauth.Exchange(ctx, code, oauth2.VerifierOption(pd.Verifier))
	if err != nil {
		return nil, refused("redeem the authorization code: %v", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return nil, refused("the token response holds no ID token")
	}
	idt, err := p.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, refused("verify the ID token: %v", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pd.Nonce)) != 1 {
		return nil, refused("the ID token's nonce is not the pending sign-in's")
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return nil, refused("read the ID token's claims: %v", err)
	}
	return &Identity{Issuer: idt.Issuer, Subject: idt.Subject, Claims: claims,
		RefreshToken: tok.RefreshToken, Expiry: idt.Expiry}, nil
}

// LogoutURL is the provider's end-session URL for RP-initiated logout
// ("" when the provider advertises none).
func (p *Provider) LogoutURL() string {
	if p.endSession == "" {
		return ""
	}
	q := url.Values{"client_id": {p.cfg.ClientID}}
	if p.cfg.PostLogoutURL != "" {
		q.Set("post_logout_redirect_uri", p.cfg.PostLogoutURL)
	}
	sep := "?"
	if strings.Contains(p.endSession, "?") {
		sep = "&"
	}
	return p.endSession + sep + q.Encode()
}

// RefusedError is a refused callback: Reason is for the log.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "oidc sign-in refused: " + e.Reason }

// Unwrap makes a refusal an apperr.Unauthorized.
func (e *RefusedError) Unwrap() error { return ErrSignIn }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// IsRefused reports whether err is a refused sign-in (not a fault).
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// VerifyBearer checks a JWT presented as a bearer token on the API:
// signed by the provider's key (fetched from its JWKS, refetched when it
// rotates; RS256 only, "none" never), for Ontoflow's audience, not
// expired, not before its nbf. Its subject is the user of the console's
// sign-in, and every token is mapped as a sign-in is (Provision): the
// required group and the roles and clearance its claims give apply at
// each request, so a user the provider stops admitting loses the API at
// their next token. A subject never seen is provisioned, so a service
// account needs no console sign-in. It implements auth.JWTVerifier.
func (p *Provider) VerifyBearer(ctx context.Context, raw string) (*models.User, error) {
	ctx = gooidc.ClientContext(ctx, p.client)
	t, err := p.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, refused("verify the bearer JWT: %v", err)
	}
	claims := map[string]any{}
	if err := t.Claims(&claims); err != nil {
		return nil, refused("read the bearer JWT's claims: %v", err)
	}
	return p.Provision(ctx, &Identity{Issuer: t.Issuer, Subject: t.Subject, Claims: claims})
}
