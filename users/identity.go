package users

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
)

// SaveIdentity finds the user an identity provider knows by issuer and
// subject (the stable key: a renamed account stays the same user), lets
// apply set its fields from the provider's claims (isNew: the user is
// being created; an error refuses the identity and writes nothing), and writes it when it is new or apply changed
// something. The common case, a known user whose claims did not change
// (every bearer JWT on the API), costs one indexed read and no write.
func (s *Store) SaveIdentity(ctx context.Context, issuer, subject string, apply func(u *models.User, isNew bool) error) (*models.User, error) {
	if u, done, err := s.identityUnchanged(ctx, issuer, subject, apply); err != nil || done {
		return u, err
	}
	var u models.User
	err := s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Where("oidc_issuer = ? AND oidc_subject = ?", issuer, subject).Take(&u).Error
		isNew := errors.Is(err, gorm.ErrRecordNotFound)
		if err != nil && !isNew {
			return fmt.Errorf("look up the user of %s: %w", subject, err)
		}
		if isNew {
			iss, sub := issuer, subject
			u = models.User{OIDCIssuer: &iss, OIDCSubject: &sub, Clearance: s.Levels.Lowest()}
		}
		if err := apply(&u, isNew); err != nil {
			return err
		}
		if isNew {
			u.ID = uuid.NewString()
			err = tx.Create(&u).Error
		} else {
			err = tx.Save(&u).Error
		}
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return apperr.New(apperr.Conflict, "the username %q is taken by another account; an administrator must rename one", u.Username)
		}
		if err != nil {
			return fmt.Errorf("save the user of %s: %w", subject, err)
		}
		return nil
	})
	auth.UsersChanged()
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// identityUnchanged reads the user of issuer and subject and applies the
// claims to it in memory: done when the user exists and nothing changed.
// Otherwise (new, changed, or refused) the caller's transaction decides.
func (s *Store) identityUnchanged(ctx context.Context, issuer, subject string, apply func(u *models.User, isNew bool) error) (*models.User, bool, error) {
	var rows []models.User
	if err := s.DB.WithContext(ctx).Where("oidc_issuer = ? AND oidc_subject = ?", issuer, subject).Limit(1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("look up the user of %s: %w", subject, err)
	}
	if len(rows) == 0 {
		return nil, false, nil
	}
	u := &rows[0]
	before, err := fingerprint(u)
	if err != nil {
		return nil, false, err
	}
	if err := apply(u, false); err != nil {
		return nil, false, nil
	}
	after, err := fingerprint(u)
	if err != nil || before != after {
		return nil, false, err
	}
	return u, true, nil
}

// fingerprint is every field apply may set, hidden ones included.
func fingerprint(u *models.User) (string, error) {
	b, err := json.Marshal(struct {
		U     *models.User
		Extra map[string]string
	}{u, u.Extra.V})
	if err != nil {
		return "", fmt.Errorf("encode the user %s: %w", u.ID, err)
	}
	return string(b), nil
}
