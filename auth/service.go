// Package auth authenticates service users for the API and WebDAV: HTTP
// Basic against argon2id password hashes, and bearer tokens issued by the
// service (stored hashed, expiring, revocable, optionally guest sessions).
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/models"
)

// Principal is an authenticated caller.
type Principal struct {
	User *models.User
	// Guest is true for a guest-session token; action policies with
	// deny_guest_sessions refuse it.
	Guest bool
	// TokenID is set when the caller used a bearer token.
	TokenID string
	// Method is "basic", "bearer" or "app_password".
	Method string
	// AppPasswordID is set when the caller used an app password; its
	// Scope is then where that password is accepted (models.AppScope*).
	AppPasswordID string
	Scope         string
}

// TokenPrefix marks Ontoflow bearer tokens so they are recognisable in logs
// and secret scanners.
const TokenPrefix = "oft_"

// ErrUnauthorized is returned for every authentication failure; the reason
// is logged, never sent to the client.
var ErrUnauthorized = apperr.New(apperr.Unauthorized, "missing or invalid credentials")

// Service authenticates callers. It is safe for concurrent use; its only
// in-memory state (short verification and user-row caches and failure
// counters) is an optimisation that each replica may hold independently.
//
// Every part of that state is bounded: verified passwords at most
// verifyCacheMax keys (a 32-byte MAC and an expiry each, ~2 MB), user rows
// at most Options.UserCacheSize (10,000 by default, LRU), failure counters
// at most throttleSize usernames and addresses (LRU, ~20 MB), and the
// verifications in flight by the requests in flight.
type Service struct {
	db       *gorm.DB
	cacheKey []byte
	cacheTTL time.Duration
	now      func() time.Time

	mu    sync.Mutex
	cache map[string]time.Time // keyed MAC of (user, password, hash) -> expiry

	throttle *throttle

	fmu     sync.Mutex
	flights map[string]*flight // password verifications in progress

	userTTL time.Duration
	umu     sync.Mutex
	users   *simplelru.LRU[string, cachedUser] // by username
	apps    *simplelru.LRU[string, cachedApp]  // by user id and lookup

	jwt JWTVerifier // nil: no bearer JWTs
}

// cachedUser is a user row read for Basic authentication.
type cachedUser struct {
	u       models.User
	expires time.Time
	epoch   uint64
}

// userEpoch counts user changes in this process (UsersChanged); a cached
// row read before the latest change is not used.
var userEpoch atomic.Uint64

// UsersChanged drops the user rows every Service of this process has
// cached. The users package calls it after it creates, updates (password,
// disabled flag, roles...) or deletes a user, so in one process a change
// takes effect at the next request; other replicas see it within their
// UserCacheTTL.
func UsersChanged() { userEpoch.Add(1) }

// flight is one password verification that concurrent attempts with the
// same credentials wait for instead of repeating it.
type flight struct {
	done chan struct{}
	ok   bool
	err  error
}

// Options tune a Service.
type Options struct {
	// CacheTTL is how long a successful password verification is remembered
	// (0 = 60s; negative disables). WebDAV clients send Basic credentials on
	// every request; argon2id costs ~20ms, so without it small-file traffic
	// would be CPU-bound on password hashing.
	CacheTTL time.Duration
	// ThrottleAfter is the number of consecutive failures for one username
	// after which attempts are refused with 429 for a while (0 = 5): 100ms
	// after the last failure, doubling per further failure.
	ThrottleAfter int
	// ThrottleAfterAddress is the same for one client address (0 = four
	// times ThrottleAfter): an address may be a NAT or proxy shared by
	// many users, while the username limit already bounds guesses at one
	// account.
	ThrottleAfterAddress int
	// MaxDelay caps that refusal window (0 = 30s).
	MaxDelay time.Duration
	// ThrottleKeys bounds the failure table; the least recently used
	// usernames and addresses are evicted beyond it (0 = 100000).
	ThrottleKeys int
	// UserCacheTTL is how long a user row read for Basic authentication is
	// reused instead of selected again (0 = 2s; negative disables). A
	// change made through the users package in this process drops it at
	// once (UsersChanged); a change made by another replica or process is
	// seen after at most this long.
	UserCacheTTL time.Duration
	// UserCacheSize bounds that cache (0 = 10000 users; least recently
	// used evicted).
	UserCacheSize int
}

// DefaultUserCacheTTL is Options.UserCacheTTL's default and the
// --user-cache-ttl flag's (one source).
const DefaultUserCacheTTL = defaults.UserCacheTTL

// NewService returns a Service over db.
func NewService(db *gorm.DB, opts Options) *Service {
	if opts.CacheTTL == 0 {
		opts.CacheTTL = 60 * time.Second
	}
	if opts.ThrottleAfter == 0 {
		opts.ThrottleAfter = 5
	}
	if opts.ThrottleAfterAddress == 0 {
		opts.ThrottleAfterAddress = 4 * opts.ThrottleAfter
	}
	if opts.MaxDelay == 0 {
		opts.MaxDelay = 30 * time.Second
	}
	if opts.UserCacheTTL == 0 {
		opts.UserCacheTTL = DefaultUserCacheTTL
	}
	if opts.UserCacheSize <= 0 {
		opts.UserCacheSize = 10000
	}
	users, err := simplelru.NewLRU[string, cachedUser](opts.UserCacheSize, nil)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	apps, err := simplelru.NewLRU[string, cachedApp](opts.UserCacheSize, nil)
	if err != nil {
		panic(err)
	}
	key := make([]byte, 32)
	copy(key, []byte(RandomSecret(32)))
	return &Service{
		db:       db,
		cacheKey: key,
		cacheTTL: opts.CacheTTL,
		now:      time.Now,
		cache:    map[string]time.Time{},
		throttle: newThrottle(opts.ThrottleAfter, opts.ThrottleAfterAddress, opts.MaxDelay, opts.ThrottleKeys),
		flights:  map[string]*flight{},
		userTTL:  opts.UserCacheTTL,
		users:    users,
		apps:     apps,
	}
}

// Authenticate reads the Authorization header of a request to the API:
// Basic with the account password or an app password scoped to the API,
// or a bearer token. WebDAV calls AuthenticateWebDAV instead.
func (s *Service) Authenticate(r *http.Request) (*Principal, error) {
	h := r.Header.Get("Authorization")
	remote := clientIP(r)
	switch {
	case h == "":
		return nil, ErrUnauthorized
	case len(h) > 7 && strings.EqualFold(h[:7], "bearer "):
		tok := strings.TrimSpace(h[7:])
		if s.jwt != nil && !strings.HasPrefix(tok, TokenPrefix) && strings.Count(tok, ".") == 2 {
			return s.bearerJWT(r.Context(), tok, remote)
		}
		return s.Bearer(r.Context(), tok, remote)
	default:
		user, pass, ok := r.BasicAuth()
		if !ok {
			return nil, ErrUnauthorized
		}
		return s.basic(r.Context(), user, pass, remote, surfaceAPI)
	}
}

// AuthenticateWebDAV admits HTTP Basic only, with the account password or
// any live app password of the user: WebDAV clients send nothing else, and
// a bearer token (a guest session's above all) must not reach the user's
// files.
func (s *Service) AuthenticateWebDAV(r *http.Request) (*Principal, error) {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return nil, ErrUnauthorized
	}
	return s.basic(r.Context(), user, pass, clientIP(r), surfaceWebDAV)
}

// surface is where credentials are presented; it decides which app
// passwords are accepted there.
type surface int

const (
	surfaceAccount surface = iota // account password only (console sign-in)
	surfaceAPI                    // app passwords scoped webdav+api too
	surfaceWebDAV                 // every app password
)

func clientIP(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	return strings.Trim(host, "[]")
}

// Basic verifies a username and account password (app passwords are not
// accepted: it signs in to the console). While the username or the
// address is over its failure limit the attempt is refused with a
// *ThrottledError (429) before anything is checked.
func (s *Service) Basic(ctx context.Context, username, password, remote string) (*Principal, error) {
	return s.basic(ctx, username, password, remote, surfaceAccount)
}

func (s *Service) basic(ctx context.Context, username, password, remote string, on surface) (*Principal, error) {
	if len(username) > 128 || len(password) > 1024 || !utf8.ValidString(username) || strings.IndexByte(username, 0) >= 0 {
		// Refused before the throttle keys them: oversized names must not
		// fill its table, and a name that is not text names no user (on
		// Postgres its lookup would fail as a 500).
		return nil, ErrUnauthorized
	}
	uk, ak := "u:"+username, "a:"+remote
	if w := s.throttle.check(uk, ak); w > 0 {
		return nil, newThrottledError(w)
	}
	u, err := s.lookup(ctx, username)
	if err != nil {
		return nil, fmt.Errorf("look up user: %w", err)
	}
	if u != nil && on != surfaceAccount && looksLikeAppPassword(password) {
		ap, err := s.appPassword(ctx, u.ID, appLookup(password))
		if err != nil {
			return nil, err
		}
		if ap != nil {
			return s.basicApp(ctx, u, ap, password, on, uk, ak)
		}
	}
	if u != nil && s.cached(s.cacheMAC(u.ID, u.PasswordHash, password)) {
		if u.Disabled {
			s.throttle.done(false, true, "", uk, ak)
			return nil, ErrUnauthorized
		}
		s.throttle.done(false, false, uk, uk, ak)
		return &Principal{User: u, Method: "basic"}, nil
	}
	hash := dummyHash
	if u != nil {
		hash = u.PasswordHash
	}
	ok, err := s.verify(ctx, u, hash, username, password, uk, ak)
	if err != nil {
		return nil, err
	}
	if !ok || u.Disabled {
		return nil, ErrUnauthorized
	}
	return &Principal{User: u, Method: "basic"}, nil
}

// verify checks password against u's hash (u nil: an unknown user, checked
// against a dummy hash so timing does not reveal which usernames exist)
// as one throttled attempt on keys. Concurrent calls with the same
// credentials share one verification and count as one attempt, so a
// client's parallel requests do not use up the in-flight allowance.
func (s *Service) verify(ctx context.Context, u *models.User, hash, username, password string, keys ...string) (bool, error) {
	k := s.flightKey(u, hash, username, password)
	s.fmu.Lock()
	if f, ok := s.flights[k]; ok {
		s.fmu.Unlock()
		select {
		case <-f.done:
			return f.ok, f.err
		case <-ctx.Done():
			return false, ErrUnauthorized
		}
	}
	f := &flight{done: make(chan struct{})}
	s.flights[k] = f
	s.fmu.Unlock()
	defer func() {
		s.fmu.Lock()
		delete(s.flights, k)
		s.fmu.Unlock()
		close(f.done)
	}()

	if w := s.throttle.admit(keys...); w > 0 {
		f.err = newThrottledError(w)
		return false, f.err
	}
	ok, err := VerifyPassword(hash, password)
	f.ok = err == nil && ok && u != nil
	failed := !f.ok || u.Disabled
	clear := ""
	if !failed {
		clear = keys[0] // the username's key
	}
	s.throttle.done(true, failed, clear, keys...)
	if f.ok {
		s.remember(s.cacheMAC(u.ID, hash, password))
	}
	return f.ok, nil
}

func (s *Service) flightKey(u *models.User, hash, username, password string) string {
	if u != nil {
		return s.cacheMAC(u.ID, hash, password)
	}
	m := hmac.New(sha256.New, s.cacheKey)
	m.Write([]byte("unknown\x00"))
	m.Write([]byte(username))
	m.Write([]byte{0})
	m.Write([]byte(password))
	return string(m.Sum(nil))
}

// lookup reads the user row of username (nil when there is none), from
// the short-lived user cache when it holds a current copy. Every Basic
// request needs the row, and WebDAV clients send one per file.
func (s *Service) lookup(ctx context.Context, username string) (*models.User, error) {
	if username == "" || len(username) > 128 {
		return nil, nil
	}
	// The epoch is read before the row: a change committed meanwhile
	// bumps it, and the row cached below is then never used.
	epoch := userEpoch.Load()
	now := s.now()
	if s.userTTL > 0 {
		s.umu.Lock()
		c, ok := s.users.Get(username)
		s.umu.Unlock()
		if ok && c.epoch == epoch && now.Before(c.expires) {
			u := c.u
			return &u, nil
		}
	}
	var u models.User
	if err := s.db.WithContext(ctx).Where("username = ?", username).Take(&u).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil
		}
		return nil, err
	}
	if s.userTTL > 0 {
		s.umu.Lock()
		s.users.Add(username, cachedUser{u: u, expires: now.Add(s.userTTL), epoch: epoch})
		s.umu.Unlock()
	}
	return &u, nil
}

// cacheMAC keys a verification of password against hash for the user
// with id userID.
func (s *Service) cacheMAC(userID, hash, password string) string {
	m := hmac.New(sha256.New, s.cacheKey)
	m.Write([]byte(userID))
	m.Write([]byte{0})
	m.Write([]byte(hash))
	m.Write([]byte{0})
	m.Write([]byte(password))
	return string(m.Sum(nil))
}

func (s *Service) cached(k string) bool {
	if s.cacheTTL < 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.cache[k]
	if ok && s.now().Before(exp) {
		return true
	}
	delete(s.cache, k)
	return false
}

// verifyCacheMax bounds the remembered verifications; when that many are
// held the expired ones are dropped, and all of them if none had expired.
const verifyCacheMax = 10000

func (s *Service) remember(k string) {
	if s.cacheTTL < 0 {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cache) >= verifyCacheMax {
		for key, exp := range s.cache {
			if now.After(exp) {
				delete(s.cache, key)
			}
		}
		if len(s.cache) >= verifyCacheMax {
			s.cache = map[string]time.Time{}
		}
	}
	s.cache[k] = now.Add(s.cacheTTL)
}

func hashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Bearer verifies a token issued by IssueToken. Failures count against the
// address; while it is over its limit the attempt is refused with a
// *ThrottledError (429).
func (s *Service) Bearer(ctx context.Context, token, remote string) (*Principal, error) {
	ak := "a:" + remote
	if w := s.throttle.check(ak); w > 0 {
		return nil, newThrottledError(w)
	}
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 200 {
		s.throttle.done(false, true, "", ak)
		return nil, ErrUnauthorized
	}
	var t models.APIToken
	// The lookup is by a SHA-256 of a 256-bit secret: an index hit on a
	// hash is not a timing oracle for the secret itself.
	err := s.db.WithContext(ctx).Where("secret_hash = ?", hashToken(token)).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		s.throttle.done(false, true, "", ak)
		return nil, ErrUnauthorized
	}
	if err != nil {
		return nil, fmt.Errorf("look up token: %w", err)
	}
	now := s.now()
	if t.RevokedAt != nil || !now.Before(t.ExpiresAt) {
		s.throttle.done(false, true, "", ak)
		return nil, ErrUnauthorized
	}
	var u models.User
	if err := s.db.WithContext(ctx).Where("id = ?", t.UserID).Take(&u).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrUnauthorized
		}
		return nil, fmt.Errorf("look up token user: %w", err)
	}
	if u.Disabled || u.PasswordEpoch != t.PasswordEpoch {
		return nil, ErrUnauthorized
	}
	if err := s.ancestorsLive(ctx, &t, now); err != nil {
		return nil, err
	}
	s.touchToken(ctx, &t, now)
	return &Principal{User: &u, Guest: t.Guest, TokenID: t.ID, Method: "bearer"}, nil
}

// LastUsedEvery is how stale a token's last_used_at may get: it is written
// on a use at most once per this interval, not on every request.
const LastUsedEvery = time.Minute

// touchToken records that t was used at now when its last_used_at is older
// than LastUsedEvery. The update is conditional, so concurrent requests
// and replicas write it at most once per interval; a failure is logged and
// does not fail the request.
func (s *Service) touchToken(ctx context.Context, t *models.APIToken, now time.Time) {
	if t.LastUsedAt != nil && now.Sub(*t.LastUsedAt) < LastUsedEvery {
		return
	}
	now = now.UTC()
	err := s.db.WithContext(ctx).Model(&models.APIToken{}).
		Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", t.ID, now.Add(-LastUsedEvery)).
		Update("last_used_at", now).Error
	if err != nil {
		slog.WarnContext(ctx, "record token use", "token", t.ID, "err", err)
		return
	}
	t.LastUsedAt = &now
}

// IssueToken creates a bearer token for u. The secret is returned once and
// never stored.
func (s *Service) IssueToken(ctx context.Context, u *models.User, name string, ttl time.Duration, guest bool) (string, *models.APIToken, error) {
	return s.issue(ctx, u, name, s.now().UTC().Add(ttl), guest, nil)
}

func (s *Service) issue(ctx context.Context, u *models.User, name string, expires time.Time, guest bool, ancestors []string) (string, *models.APIToken, error) {
	secret := TokenPrefix + RandomSecret(32)
	t := &models.APIToken{
		ID:            uuid.NewString(),
		UserID:        u.ID,
		Name:          name,
		SecretHash:    hashToken(secret),
		Guest:         guest,
		ExpiresAt:     expires,
		PasswordEpoch: u.PasswordEpoch,
		Ancestors:     models.NewJSON(ancestors),
	}
	if err := s.db.WithContext(ctx).Create(t).Error; err != nil {
		return "", nil, fmt.Errorf("store token: %w", err)
	}
	return secret, t, nil
}

// RevokeToken revokes one of u's tokens (admins may revoke any). A guest
// session may revoke only its user's guest tokens (itself included):
// revoking one of the user's full tokens is PermissionDenied, and the
// admin role does not extend to a guest session.
func (s *Service) RevokeToken(ctx context.Context, p *Principal, id string) error {
	q := s.db.WithContext(ctx).Model(&models.APIToken{}).Where("id = ? AND revoked_at IS NULL", id)
	if p.Guest || !p.User.IsAdmin() {
		q = q.Where("user_id = ?", p.User.ID)
	}
	if p.Guest {
		var t models.APIToken
		err := s.db.WithContext(ctx).Where("id = ? AND user_id = ? AND revoked_at IS NULL", id, p.User.ID).Take(&t).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return apperr.New(apperr.TokenNotFound, "token %q not found", id)
		}
		if err != nil {
			return fmt.Errorf("look up token: %w", err)
		}
		if !t.Guest {
			return apperr.New(apperr.PermissionDenied, "a guest session may revoke only guest tokens")
		}
		q = q.Where("guest = ?", true)
	}
	now := s.now().UTC()
	res := q.Update("revoked_at", &now)
	if res.Error != nil {
		return fmt.Errorf("revoke token: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return apperr.New(apperr.TokenNotFound, "token %q not found", id)
	}
	return s.revokeDescendants(ctx, id, now)
}

// ParseBasic decodes a Basic credentials string (for callers that are not
// http.Requests).
func ParseBasic(h string) (user, pass string, ok bool) {
	if len(h) < 6 || !strings.EqualFold(h[:6], "basic ") {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(h[6:])
	if err != nil {
		return "", "", false
	}
	user, pass, ok = strings.Cut(string(b), ":")
	return
}
