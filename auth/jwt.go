package auth

import (
	"context"
	"log/slog"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// JWTVerifier checks a bearer JWT issued by the identity provider
// (signature against its JWKS, algorithm, issuer, audience, expiry,
// not-before) and returns the user of its subject. auth/oidc implements
// it; auth cannot import that package, which stands on this one.
type JWTVerifier func(ctx context.Context, raw string) (*models.User, error)

// SetJWTVerifier makes the API accept bearer JWTs from the identity
// provider beside Ontoflow's own tokens. It is set once, at assembly,
// before the service serves.
func (s *Service) SetJWTVerifier(v JWTVerifier) { s.jwt = v }

// bearerJWT admits a JWT the verifier accepts, for a user who is not
// disabled. A refusal counts against the address, as a bad token does.
func (s *Service) bearerJWT(ctx context.Context, raw, remote string) (*Principal, error) {
	ak := "a:" + remote
	if w := s.throttle.check(ak); w > 0 {
		return nil, newThrottledError(w)
	}
	if len(raw) > 16384 {
		s.throttle.done(false, true, "", ak)
		return nil, ErrUnauthorized
	}
	u, err := s.jwt(ctx, raw)
	if err != nil {
		if ae, ok := apperr.As(err); ok && ae.Code == apperr.Internal || !ok {
			slog.WarnContext(ctx, "verify bearer JWT", "err", err)
		}
		s.throttle.done(false, true, "", ak)
		return nil, ErrUnauthorized
	}
	if u == nil || u.Disabled {
		return nil, ErrUnauthorized
	}
	return &Principal{User: u, Method: "jwt"}, nil
}
