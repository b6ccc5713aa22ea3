package auth

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"
)

// KeepIdPSession records (or replaces) the identity provider's side of
// the console session of tokenID: its sealed refresh token and when to
// check with the provider next.
func (s *Service) KeepIdPSession(ctx context.Context, sess models.IdPSession) error {
	sess.CheckAt = sess.CheckAt.UTC()
	db := s.db.WithContext(ctx)
	if err := db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&sess).Error; err != nil {
		return fmt.Errorf("keep the identity provider's session: %w", err)
	}
	// The user's sessions that ended (signed out, expired) are forgotten
	// here, so their rows stay as few as the user's live sessions.
	ended := s.db.Model(&models.APIToken{}).Select("id").
		Where("user_id = ? AND (revoked_at IS NOT NULL OR expires_at < ?)", sess.UserID, s.now().UTC())
	if err := db.Where("user_id = ? AND token_id IN (?)", sess.UserID, ended).Delete(&models.IdPSession{}).Error; err != nil {
		return fmt.Errorf("forget ended identity provider sessions: %w", err)
	}
	return nil
}

// ClaimIdPCheck reports whether the console session of tokenID is due a
// check with the identity provider, and if so claims it for lease (so
// one replica, one request, refreshes; a provider that rotates refresh
// tokens would refuse a second use). found: the session began at the
// provider. Not due, it costs one read by primary key.
func (s *Service) ClaimIdPCheck(ctx context.Context, tokenID string, lease time.Duration) (sess models.IdPSession, due, found bool, err error) {
	var rows []models.IdPSession
	if err := s.db.WithContext(ctx).Where("token_id = ?", tokenID).Limit(1).Find(&rows).Error; err != nil {
		return sess, false, false, fmt.Errorf("read the identity provider's session: %w", err)
	}
	if len(rows) == 0 {
		return sess, false, false, nil
	}
	sess = rows[0]
	now := s.now().UTC()
	if now.Before(sess.CheckAt) {
		return sess, false, true, nil
	}
	res := s.db.WithContext(ctx).Model(&models.IdPSession{}).
		Where("token_id = ? AND check_at <= ?", tokenID, now).Update("check_at", now.Add(lease))
	if res.Error != nil {
		return sess, false, true, fmt.Errorf("claim the identity provider's session check: %w", res.Error)
	}
	return sess, res.RowsAffected == 1, true, nil
}

// EndIdPSession revokes the console session of tokenID and forgets the
// provider's side: the provider no longer vouches for it.
func (s *Service) EndIdPSession(ctx context.Context, tokenID string) error {
	now := s.now().UTC()
	err := s.db.WithContext(ctx).Model(&models.APIToken{}).
		Where("id = ? AND revoked_at IS NULL", tokenID).Update("revoked_at", &now).Error
	if err != nil {
		return fmt.Errorf("revoke the session's token: %w", err)
	}
	if err := s.db.WithContext(ctx).Where("token_id = ?", tokenID).Delete(&models.IdPSession{}).Error; err != nil {
		return fmt.Errorf("drop the identity provider's session: %w", err)
	}
	return nil
}
