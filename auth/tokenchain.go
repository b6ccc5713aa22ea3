package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// MaxTokenDepth bounds how deep tokens issued through tokens nest, so the
// check of a token's ancestors stays one short query.
const MaxTokenDepth = 8

// IssueTokenFor issues a token for the caller p. Issued through a bearer
// token, the new token is that token's child: it expires no later than
// its parent, is a guest token when the parent is one, and dies when any
// of its ancestors is revoked or expires (and, like every token, when the
// password changes). Issued with a password it stands alone.
func (s *Service) IssueTokenFor(ctx context.Context, p *Principal, name string, ttl time.Duration, guest bool) (string, *models.APIToken, error) {
	if p.AppPasswordID != "" {
		// A token would outlive the app password's revocation.
		return "", nil, RequireFullSession(p, "issue tokens")
	}
	expires := s.now().UTC().Add(ttl)
	guest = guest || p.Guest
	if p.TokenID == "" {
		return s.issue(ctx, p.User, name, expires, guest, nil)
	}
	var parent models.APIToken
	if err := s.db.WithContext(ctx).Where("id = ?", p.TokenID).Take(&parent).Error; err != nil {
		return "", nil, fmt.Errorf("load parent token: %w", err)
	}
	if len(parent.Ancestors.V) >= MaxTokenDepth {
		return "", nil, apperr.New(apperr.PermissionDenied, "tokens issued through tokens nest at most %d deep; issue this one with a password or a token higher up", MaxTokenDepth)
	}
	if parent.ExpiresAt.Before(expires) {
		expires = parent.ExpiresAt.UTC()
	}
	chain := append(append([]string{}, parent.Ancestors.V...), parent.ID)
	return s.issue(ctx, p.User, name, expires, guest || parent.Guest, chain)
}

// ancestorsLive refuses t when a token it was issued through is revoked,
// expired or gone. Revocation also marks the descendants revoked
// (revokeDescendants); this check is what holds when a child was being
// issued while its parent was revoked.
func (s *Service) ancestorsLive(ctx context.Context, t *models.APIToken, now time.Time) error {
	up := t.Ancestors.V
	if len(up) == 0 {
		return nil
	}
	var live int64
	err := s.db.WithContext(ctx).Model(&models.APIToken{}).
		Where("id IN ? AND user_id = ? AND revoked_at IS NULL AND expires_at > ?", up, t.UserID, now.UTC()).
		Count(&live).Error
	if err != nil {
		return fmt.Errorf("check token ancestors: %w", err)
	}
	if int(live) != len(up) {
		return ErrUnauthorized
	}
	return nil
}

// revokeDescendants marks revoked every live token issued through id, so
// a token list shows them dead. Ancestors is a JSON array of UUIDs in a
// text column: the quoted id matches only itself, on either dialect.
func (s *Service) revokeDescendants(ctx context.Context, id string, now time.Time) error {
	err := s.db.WithContext(ctx).Model(&models.APIToken{}).
		Where("revoked_at IS NULL AND ancestors LIKE ?", `%"`+id+`"%`).
		Update("revoked_at", &now).Error
	if err != nil {
		return fmt.Errorf("revoke tokens issued through %s: %w", id, err)
	}
	return nil
}
