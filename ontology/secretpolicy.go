package ontology

import (
	"context"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// SecretPolicy judges the references an action type makes to secrets
// when it is saved by definer (secrets.Store is one): who may use each
// secret and where it may be sent (docs/security.md, "Secrets").
type SecretPolicy interface {
	CheckUses(ctx context.Context, definer *models.User, uses []domain.SecretUse) error
}

// WithSecretPolicy makes every save of an action type through the store
// (and the stores As and Over derive from it) pass p.
func WithSecretPolicy(p SecretPolicy) Option { return func(s *Store) { s.secrets = p } }

// checkSecretUses applies the secret policy to d as saved by the store's
// reader (As, as every route of the API writes). Without a reader there
// is no definer to allow, so no secret may be referenced.
func (s *Store) checkSecretUses(ctx context.Context, d domain.ActionDefinition) error {
	if s.secrets == nil {
		return nil
	}
	uses := s.kinds.SecretUses(d)
	if len(uses) == 0 {
		return nil
	}
	return s.secrets.CheckUses(ctx, s.reader, uses)
}
