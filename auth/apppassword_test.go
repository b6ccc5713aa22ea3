package auth_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

func webdavAuth(s *auth.Service, user, pass string) (*auth.Principal, error) {
	r := httptest.NewRequest("PROPFIND", "/webdav/", nil)
	r.SetBasicAuth(user, pass)
	return s.AuthenticateWebDAV(r)
}

func signIn(t *testing.T, s *auth.Service, user, pass string) *auth.Principal {
	t.Helper()
	p, err := s.Basic(context.Background(), user, pass, "127.0.0.1")
	if err != nil {
		t.Fatalf("sign in %s: %v", user, err)
	}
	return p
}

// An app password works where its scope reaches, with the username, and
// nowhere else: a WebDAV-scoped one on the API is refused, neither signs
// in to the console (Basic), and the account password keeps working.
func TestAppPasswordScopes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{})
		addUser(t, db, "alice", "alice-password", false)
		p := signIn(t, s, "alice", "alice-password")

		dav, info, err := s.CreateAppPassword(ctx, p, auth.AppPasswordSpec{Name: "laptop davfs2"})
		if err != nil || info.Scope != models.AppScopeWebDAV || len(dav) < 40 {
			t.Fatalf("create webdav app password: %q %+v %v", dav, info, err)
		}
		both, _, err := s.CreateAppPassword(ctx, p, auth.AppPasswordSpec{Name: "script", Scope: models.AppScopeWebDAVAPI})
		if err != nil {
			t.Fatal(err)
		}

		for i := 0; i < 2; i++ { // the second time from the verification cache
			q, err := webdavAuth(s, "alice", dav)
			if err != nil || q.User.Username != "alice" || q.Method != "app_password" || q.AppPasswordID != info.ID {
				t.Fatalf("webdav with a webdav app password (%d): %+v %v", i, q, err)
			}
			q, err = s.Authenticate(basicRequest("alice", dav))
			wantUnauthorized(t, "api with a webdav-only app password", q, err)
			q, err = s.Authenticate(basicRequest("alice", both))
			if err != nil || q.Scope != models.AppScopeWebDAVAPI {
				t.Fatalf("api with a webdav+api app password: %+v %v", q, err)
			}
			if _, err := webdavAuth(s, "alice", both); err != nil {
				t.Fatalf("webdav with a webdav+api app password: %v", err)
			}
		}
		q, err := s.Basic(ctx, "alice", both, "127.0.0.1")
		wantUnauthorized(t, "console sign-in with an app password", q, err)
		q, err = webdavAuth(s, "bob", dav)
		wantUnauthorized(t, "another username", q, err)
		q, err = webdavAuth(s, "alice", dav[:len(dav)-1]+"x")
		wantUnauthorized(t, "a changed secret", q, err)
		if _, err := webdavAuth(s, "alice", "alice-password"); err != nil {
			t.Fatalf("account password on webdav: %v", err)
		}

		// An app password mints no other credential.
		ap, _ := s.Authenticate(basicRequest("alice", both))
		if _, _, err := s.IssueTokenFor(ctx, ap, "x", time.Hour, false); !apperr.Is(err, apperr.PermissionDenied) {
			t.Errorf("token issued through an app password: %v", err)
		}
		if _, _, err := s.CreateAppPassword(ctx, ap, auth.AppPasswordSpec{Name: "y"}); !apperr.Is(err, apperr.PermissionDenied) {
			t.Errorf("app password created through an app password: %v", err)
		}
	})
}

// A revoked app password stops at the next request, though its
// verification and its row are cached; a disabled user's stop too.
func TestAppPasswordRevokedStopsAtOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{UserCacheTTL: time.Hour})
		addUser(t, db, "alice", "alice-password", false)
		p := signIn(t, s, "alice", "alice-password")
		pw, info, err := s.CreateAppPassword(ctx, p, auth.AppPasswordSpec{Name: "phone"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := webdavAuth(s, "alice", pw); err != nil {
			t.Fatalf("before revocation: %v", err)
		}
		if err := s.RevokeAppPassword(ctx, p, info.ID); err != nil {
			t.Fatal(err)
		}
		q, err := webdavAuth(s, "alice", pw)
		wantUnauthorized(t, "revoked app password", q, err)
		if err := s.RevokeAppPassword(ctx, p, info.ID); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("second revocation: %v, want NotFound", err)
		}

		// Bob may not revoke Alice's.
		addUser(t, db, "bob", "bob-password", false)
		pw2, info2, _ := s.CreateAppPassword(ctx, p, auth.AppPasswordSpec{Name: "tablet"})
		if err := s.RevokeAppPassword(ctx, signIn(t, s, "bob", "bob-password"), info2.ID); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("bob revoking alice's: %v", err)
		}
		if _, err := webdavAuth(s, "alice", pw2); err != nil {
			t.Fatalf("after bob's attempt: %v", err)
		}
		// Disabling the user stops them.
		if err := db.Model(&models.User{}).Where("username = ?", "alice").Update("disabled", true).Error; err != nil {
			t.Fatal(err)
		}
		auth.UsersChanged()
		q, err = webdavAuth(s, "alice", pw2)
		wantUnauthorized(t, "disabled user's app password", q, err)
	})
}

// An app password with an expiry stops at it; one cannot be created
// already expired; the list shows last use and never the secret.
func TestAppPasswordExpiryAndList(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{})
		clock := time.Now()
		auth.SetClock(s, func() time.Time { return clock })
		addUser(t, db, "alice", "alice-password", false)
		p := signIn(t, s, "alice", "alice-password")
		past := clock.Add(-time.Minute)
		if _, _, err := s.CreateAppPassword(ctx, p, auth.AppPasswordSpec{Name: "x", ExpiresAt: &past}); !apperr.Is(err, apperr.InvalidArgument) {
			t.Errorf("expired at creation: %v", err)
		}
		for _, bad := range []auth.AppPasswordSpec{{Name: " "}, {Name: "x", Scope: "api"}} {
			if _, _, err := s.CreateAppPassword(ctx, p, bad); !apperr.Is(err, apperr.InvalidArgument) {
				t.Errorf("%+v: %v, want InvalidArgument", bad, err)
			}
		}
		exp := clock.Add(time.Hour)
		pw, info, err := s.CreateAppPassword(ctx, p, auth.AppPasswordSpec{Name: "rclone", ExpiresAt: &exp})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := webdavAuth(s, "alice", pw); err != nil {
			t.Fatalf("before expiry: %v", err)
		}
		list, err := s.ListAppPasswords(ctx, p.User.ID)
		if err != nil || len(list) != 1 || list[0].ID != info.ID || list[0].LastUsedAt == nil || list[0].Hash == pw {
			t.Fatalf("list: %+v %v", list, err)
		}
		clock = exp.Add(time.Second)
		q, err := webdavAuth(s, "alice", pw)
		wantUnauthorized(t, "expired app password", q, err)
	})
}
