package auth

import (
	"context"
	"fmt"

	"github.com/ontoflow/ontoflow/models"
)

// ListTokens returns p's user's tokens, newest first (ties by id),
// skipping offset and at most limit. A guest session sees only what it may
// revoke, the user's guest tokens: not the names and ids of the full ones.
func (s *Service) ListTokens(ctx context.Context, p *Principal, offset, limit int) ([]*models.APIToken, error) {
	q := s.db.WithContext(ctx).Where("user_id = ?", p.User.ID)
	if p.Guest {
		q = q.Where("guest = ?", true)
	}
	var toks []*models.APIToken
	if err := q.Order("created_at DESC, id").Offset(offset).Limit(limit).Find(&toks).Error; err != nil {
		return nil, fmt.Errorf("list the tokens of %s: %w", p.User.ID, err)
	}
	return toks, nil
}
