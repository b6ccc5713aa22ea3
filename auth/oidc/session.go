package oidc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// A console session that began at the provider lasts only as long as the
// provider vouches for it: when its ID token expires, the session's next
// request refreshes it with the provider's refresh token, and maps the
// new claims as a sign-in does. A provider that refuses the refresh (its
// session ended, the account was disabled or signed out everywhere), a
// new ID token that no longer admits the user, or no refresh token at all
// ends the console session there. A provider that cannot be reached
// leaves the session as it is and is asked again after checkLease: an
// outage should not sign everyone out, and while it lasts nobody could
// sign in again anyway.

// Sessions keeps the provider's side of console sessions (auth.Service).
type Sessions interface {
	KeepIdPSession(ctx context.Context, sess models.IdPSession) error
	ClaimIdPCheck(ctx context.Context, tokenID string, lease time.Duration) (sess models.IdPSession, due, found bool, err error)
	EndIdPSession(ctx context.Context, tokenID string) error
}

// Sealer keeps refresh tokens encrypted at rest (secrets.Store).
type Sealer interface {
	Seal(purpose, value string) (string, error)
	Unseal(purpose, sealed string) (string, error)
}

// checkLease is how long one request's check of a session holds it
// before another may try (the provider's answer takes at most
// discoveryTimeout).
const checkLease = 30 * time.Second

// noExpiryCheck is when a session whose ID token named no expiry is
// checked.
const noExpiryCheck = 5 * time.Minute

// TrackSessions makes the provider keep and check the console sessions it
// signs in; without it (tests of the flow alone) they last their token's
// lifetime.
func (p *Provider) TrackSessions(s Sessions, sealer Sealer) {
	p.sessions, p.sealer = s, sealer
}

func refreshPurpose(tokenID string) string { return "oidc-refresh/" + tokenID }

// KeepSession records the provider's side of the console session tokenID
// of userID, begun or refreshed with id.
func (p *Provider) KeepSession(ctx context.Context, tokenID, userID string, id *Identity) error {
	if p.sessions == nil {
		return nil
	}
	sealed := ""
	if id.RefreshToken != "" && p.sealer != nil {
		s, err := p.sealer.Seal(refreshPurpose(tokenID), id.RefreshToken)
		if err != nil {
			// Without a secret key the session ends when its ID token
			// expires, and the user signs in again.
			slog.WarnContext(ctx, "oidc: the refresh token is not kept; the session ends with its ID token", "err", err)
		}
		sealed = s
	}
	checkAt := id.Expiry
	if checkAt.IsZero() {
		checkAt = time.Now().Add(noExpiryCheck)
	}
	return p.sessions.KeepIdPSession(ctx, models.IdPSession{TokenID: tokenID, UserID: userID, Refresh: sealed, CheckAt: checkAt})
}

// CheckSession checks the console session tokenID of userID with the
// provider when it is due. ended: the provider no longer vouches for it,
// and it has been revoked. A session that did not begin at the provider
// is never ended here.
func (p *Provider) CheckSession(ctx context.Context, tokenID, userID string) (ended bool, err error) {
	if p.sessions == nil {
		return false, nil
	}
	sess, due, _, err := p.sessions.ClaimIdPCheck(ctx, tokenID, checkLease)
	if err != nil || !due {
		return false, err
	}
	id, err := p.refresh(ctx, tokenID, sess)
	if err == nil {
		var u *models.User
		u, err = p.Provision(ctx, id)
		if err == nil && u.ID != userID {
			err = refused("the refreshed token's subject is another user")
		}
		if err == nil {
			return false, p.KeepSession(ctx, tokenID, userID, id)
		}
	}
	var ae *apperr.Error
	if !IsRefused(err) && (!errors.As(err, &ae) || ae.Code == apperr.Internal) {
		return false, fmt.Errorf("check the session with the identity provider: %w", err)
	}
	slog.InfoContext(ctx, "oidc: the identity provider no longer vouches for a console session; it ends", "user_id", userID, "reason", err)
	if err := p.sessions.EndIdPSession(ctx, tokenID); err != nil {
		return false, err
	}
	return true, nil
}

// refresh redeems the session's refresh token for a new, verified ID
// token. A refusal (RefusedError) ends the session; other errors are the
// provider out of reach.
func (p *Provider) refresh(ctx context.Context, tokenID string, sess models.IdPSession) (*Identity, error) {
	if sess.Refresh == "" || p.sealer == nil {
		return nil, refused("no refresh token: the session ends with its ID token")
	}
	rt, err := p.sealer.Unseal(refreshPurpose(tokenID), sess.Refresh)
	if err != nil {
		return nil, refused("the refresh token does not unseal: %v", err)
	}
	ctx = gooidc.ClientContext(ctx, p.client)
	tok, err := p.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: rt}).Token()
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return nil, refused("the provider refused the refresh: %s", re.ErrorCode)
	}
	if err != nil {
		return nil, fmt.Errorf("refresh at the identity provider: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, refused("the refresh answer holds no ID token")
	}
	idt, err := p.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, refused("verify the refreshed ID token: %v", err)
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return nil, refused("read the refreshed ID token's claims: %v", err)
	}
	if tok.RefreshToken != "" {
		rt = tok.RefreshToken // a provider that rotates them
	}
	return &Identity{Issuer: idt.Issuer, Subject: idt.Subject, Claims: claims, RefreshToken: rt, Expiry: idt.Expiry}, nil
}
