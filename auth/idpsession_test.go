package auth_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// The provider's side of console sessions: a check is claimed by one
// caller only while due, and a user's ended sessions are forgotten at
// their next sign-in.
func TestIdPSessions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{})
		addUser(t, db, "hana", "hana-password", false)
		p := signIn(t, s, "hana", "hana-password")
		issue := func() *models.APIToken {
			_, tok, err := s.IssueTokenFor(ctx, p, "console", time.Hour, false)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		a, b := issue(), issue()
		keep := func(tok *models.APIToken, at time.Time) {
			if err := s.KeepIdPSession(ctx, models.IdPSession{TokenID: tok.ID, UserID: p.User.ID, Refresh: "sealed", CheckAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		keep(a, time.Now().Add(time.Hour))
		keep(b, time.Now().Add(-time.Second))
		if _, due, found, err := s.ClaimIdPCheck(ctx, a.ID, time.Minute); err != nil || due || !found {
			t.Errorf("a session not yet due: due %v found %v %v", due, found, err)
		}
		if _, due, found, err := s.ClaimIdPCheck(ctx, "no-such-token", time.Minute); err != nil || due || found {
			t.Errorf("a session not begun at the provider: due %v found %v %v", due, found, err)
		}
		sess, due, _, err := s.ClaimIdPCheck(ctx, b.ID, time.Minute)
		if err != nil || !due || sess.Refresh != "sealed" {
			t.Fatalf("a due session: %+v due %v %v", sess, due, err)
		}
		if _, due, _, err := s.ClaimIdPCheck(ctx, b.ID, time.Minute); err != nil || due {
			t.Errorf("a claimed check claimed again: due %v %v", due, err)
		}
		if err := s.RevokeToken(ctx, p, a.ID); err != nil {
			t.Fatal(err)
		}
		keep(issue(), time.Now().Add(time.Hour))
		var n int64
		db.Model(&models.IdPSession{}).Where("token_id = ?", a.ID).Count(&n)
		if n != 0 {
			t.Errorf("the signed-out session's row is kept")
		}
		db.Model(&models.IdPSession{}).Where("user_id = ?", p.User.ID).Count(&n)
		if n != 2 {
			t.Errorf("%d rows, want the two live sessions'", n)
		}
		if err := s.EndIdPSession(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		var tok models.APIToken
		if err := db.Where("id = ?", b.ID).Take(&tok).Error; err != nil || tok.RevokedAt == nil {
			t.Errorf("the ended session's token is not revoked: %+v %v", tok, err)
		}
	})
}
