package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// AppPasswordPrefix marks app passwords, as TokenPrefix marks tokens.
const AppPasswordPrefix = "ofa_"

// appLookupLen is the length of the part of an app password after the
// prefix that is stored in clear to find its row; the rest of the secret
// (32 random bytes) is what guessing would have to find.
const appLookupLen = 12

// appPasswordLen is the length of an app password: the prefix, the
// lookup and 32 random bytes in URL-safe base64 (43 characters).
const appPasswordLen = len(AppPasswordPrefix) + appLookupLen + 43

// MaxAppPasswords bounds the live app passwords of one user, so a list
// stays one page and a script cannot fill the table.
const MaxAppPasswords = 50

// cachedApp is an app password row (nil: none with that lookup) read for
// Basic authentication, dropped like cachedUser by any credentials change
// in this process.
type cachedApp struct {
	ap      *models.AppPassword
	expires time.Time
	epoch   uint64
}

func looksLikeAppPassword(pw string) bool {
	return len(pw) == appPasswordLen && strings.HasPrefix(pw, AppPasswordPrefix)
}

func appLookup(pw string) string {
	return pw[len(AppPasswordPrefix) : len(AppPasswordPrefix)+appLookupLen]
}

// appPassword reads the app password of userID with lookup (nil when
// there is none), from the cache when it holds a current copy. A
// revocation in this process bumps the epoch, so it holds at the next
// request; one made by another replica within UserCacheTTL.
func (s *Service) appPassword(ctx context.Context, userID, lookup string) (*models.AppPassword, error) {
	key := userID + "\x00" + lookup
	epoch := userEpoch.Load()
	now := s.now()
	if s.userTTL > 0 {
		s.umu.Lock()
		c, ok := s.apps.Get(key)
		s.umu.Unlock()
		if ok && c.epoch == epoch && now.Before(c.expires) {
			return c.ap, nil
		}
	}
	var ap models.AppPassword
	err := s.db.WithContext(ctx).Where("user_id = ? AND lookup = ?", userID, lookup).Take(&ap).Error
	found := err == nil
	if errors.Is(err, gorm.ErrRecordNotFound) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up app password: %w", err)
	}
	var out *models.AppPassword
	if found {
		out = &ap
	}
	if s.userTTL > 0 {
		s.umu.Lock()
		s.apps.Add(key, cachedApp{ap: out, expires: now.Add(s.userTTL), epoch: epoch})
		s.umu.Unlock()
	}
	return out, nil
}

// basicApp verifies password against the app password ap of u: one
// throttled attempt, like an account password, remembered in the same
// verification cache. A revoked or expired app password, or one of a
// disabled user, counts as a failure; a live one presented where its scope
// does not reach (a WebDAV-only one on the API) is refused without
// counting, as no guess was made.
func (s *Service) basicApp(ctx context.Context, u *models.User, ap *models.AppPassword, password string, on surface, uk, ak string) (*Principal, error) {
	k := s.cacheMAC(u.ID+"/"+ap.ID, ap.Hash, password)
	ok := s.cached(k)
	if !ok {
		var err error
		ok, err = s.verify(ctx, u, ap.Hash, u.Username, password, uk, ak)
		if err != nil {
			return nil, err
		}
	}
	now := s.now()
	live := ap.RevokedAt == nil && (ap.ExpiresAt == nil || now.Before(*ap.ExpiresAt))
	if !ok || !live || u.Disabled {
		s.throttle.done(false, true, "", uk, ak)
		return nil, ErrUnauthorized
	}
	s.remember(k)
	s.throttle.done(false, false, uk, uk, ak)
	if on == surfaceAPI && ap.Scope != models.AppScopeWebDAVAPI {
		return nil, apperr.New(apperr.Unauthorized, "this app password is for WebDAV only; create one with scope %q to use the API", models.AppScopeWebDAVAPI)
	}
	s.touchAppPassword(ctx, ap, now)
	return &Principal{User: u, Method: "app_password", AppPasswordID: ap.ID, Scope: ap.Scope}, nil
}

// touchAppPassword records a use at most once per LastUsedEvery, as
// touchToken does for tokens; the cached row carries the time so a
// cached password does not query again.
func (s *Service) touchAppPassword(ctx context.Context, ap *models.AppPassword, now time.Time) {
	s.umu.Lock()
	last := ap.LastUsedAt
	s.umu.Unlock()
	if last != nil && now.Sub(*last) < LastUsedEvery {
		return
	}
	now = now.UTC()
	err := s.db.WithContext(ctx).Model(&models.AppPassword{}).
		Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", ap.ID, now.Add(-LastUsedEvery)).
		Update("last_used_at", now).Error
	if err != nil {
		slog.WarnContext(ctx, "record app password use", "app_password", ap.ID, "err", err)
		return
	}
	s.umu.Lock()
	ap.LastUsedAt = &now
	s.umu.Unlock()
}

// AppPasswordSpec is what a user chooses for a new app password.
type AppPasswordSpec struct {
	// Name says which device or program holds it (1-128 characters).
	Name string `json:"name"`
	// Scope is models.AppScopeWebDAV (default) or AppScopeWebDAVAPI.
	Scope string `json:"scope"`
	// ExpiresAt is when it stops working (nil: when revoked).
	ExpiresAt *time.Time `json:"expires_at"`
}

func (s *Service) checkAppPasswordSpec(sp *AppPasswordSpec) error {
	sp.Name = strings.TrimSpace(sp.Name)
	if sp.Name == "" || utf8.RuneCountInString(sp.Name) > 128 || !utf8.ValidString(sp.Name) {
		return apperr.New(apperr.InvalidArgument, "name must be 1-128 characters naming the device or program").
			WithDetails(apperr.Detail{Field: "name", Reason: "invalid", Message: "1-128 characters"})
	}
	switch sp.Scope {
	case "":
		sp.Scope = models.AppScopeWebDAV
	case models.AppScopeWebDAV, models.AppScopeWebDAVAPI:
	default:
		return apperr.New(apperr.InvalidArgument, "scope must be %q or %q", models.AppScopeWebDAV, models.AppScopeWebDAVAPI).
			WithDetails(apperr.Detail{Field: "scope", Reason: "invalid", Message: "webdav or webdav+api"})
	}
	if sp.ExpiresAt != nil && !sp.ExpiresAt.After(s.now()) {
		return apperr.New(apperr.InvalidArgument, "expires_at must be in the future").
			WithDetails(apperr.Detail{Field: "expires_at", Reason: "past", Message: "in the past"})
	}
	return nil
}

// CreateAppPassword creates an app password for the caller. The secret
// is returned once; only its argon2id hash is kept.
func (s *Service) CreateAppPassword(ctx context.Context, p *Principal, sp AppPasswordSpec) (string, *models.AppPassword, error) {
	if err := RequireFullSession(p, "create app passwords"); err != nil {
		return "", nil, err
	}
	if p == nil || p.User == nil {
		return "", nil, ErrUnauthorized
	}
	if err := s.checkAppPasswordSpec(&sp); err != nil {
		return "", nil, err
	}
	var live int64
	err := s.db.WithContext(ctx).Model(&models.AppPassword{}).
		Where("user_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)", p.User.ID, s.now().UTC()).
		Count(&live).Error
	if err != nil {
		return "", nil, fmt.Errorf("count app passwords: %w", err)
	}
	if live >= MaxAppPasswords {
		return "", nil, apperr.New(apperr.Conflict, "you have %d live app passwords, the most allowed; revoke one first", live)
	}
	rest := RandomSecret(32)
	lookup := RandomSecret(9) // 12 characters
	secret := AppPasswordPrefix + lookup + rest
	hash, err := HashPassword(secret)
	if err != nil {
		return "", nil, fmt.Errorf("hash app password: %w", err)
	}
	ap := &models.AppPassword{ID: uuid.NewString(), UserID: p.User.ID, Name: sp.Name, Lookup: lookup,
		Hash: hash, Scope: sp.Scope, ExpiresAt: utcPtr(sp.ExpiresAt), CreatedAt: s.now().UTC()}
	if err := s.db.WithContext(ctx).Create(ap).Error; err != nil {
		return "", nil, fmt.Errorf("store app password: %w", err)
	}
	UsersChanged() // a cached "no such app password" must not outlive it
	return secret, ap, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ListAppPasswords lists userID's app passwords, newest first, revoked
// ones included (the list is bounded by MaxAppPasswords live ones and the
// revoked ones of the last 30 days).
func (s *Service) ListAppPasswords(ctx context.Context, userID string) ([]models.AppPassword, error) {
	var out []models.AppPassword
	since := s.now().UTC().Add(-30 * 24 * time.Hour)
	err := s.db.WithContext(ctx).Where("user_id = ? AND (revoked_at IS NULL OR revoked_at > ?)", userID, since).
		Order("created_at DESC, id").Limit(500).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list app passwords: %w", err)
	}
	return out, nil
}

// RevokeAppPassword revokes one of the caller's app passwords (an admin
// may revoke anyone's). It stops working at once in this process and
// within UserCacheTTL on other replicas.
func (s *Service) RevokeAppPassword(ctx context.Context, p *Principal, id string) error {
	if err := RequireFullSession(p, "revoke app passwords"); err != nil {
		return err
	}
	if p == nil || p.User == nil {
		return ErrUnauthorized
	}
	q := s.db.WithContext(ctx).Model(&models.AppPassword{}).Where("id = ? AND revoked_at IS NULL", id)
	if !p.User.IsAdmin() {
		q = q.Where("user_id = ?", p.User.ID)
	}
	now := s.now().UTC()
	res := q.Update("revoked_at", &now)
	UsersChanged()
	if res.Error != nil {
		return fmt.Errorf("revoke app password: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return apperr.New(apperr.NotFound, "app password %q not found", id)
	}
	return nil
}
