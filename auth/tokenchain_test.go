package auth_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// A child token is refused once an ancestor is revoked even when the
// revocation did not mark it (a child issued while its parent was being
// revoked): the check at authentication, not the cascade, is what holds.
// Chains are capped at auth.MaxTokenDepth.
func TestTokenChain(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := auth.NewService(db, auth.Options{})
		u := addUser(t, db, "alice", "alice-password", false)
		rootSecret, root, err := s.IssueToken(ctx, u, "root", time.Hour, true)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Authenticate(bearerRequest(rootSecret))
		if err != nil {
			t.Fatal(err)
		}
		childSecret, child, err := s.IssueTokenFor(ctx, p, "child", 48*time.Hour, false)
		if err != nil {
			t.Fatal(err)
		}
		if !child.Guest || child.ExpiresAt.After(root.ExpiresAt) {
			t.Fatalf("child of a guest token: guest=%v expires %v (parent %v)", child.Guest, child.ExpiresAt, root.ExpiresAt)
		}
		if _, err := s.Authenticate(bearerRequest(childSecret)); err != nil {
			t.Fatalf("live child: %v", err)
		}
		// Revoke the root behind the service's back: no cascade.
		if err := db.Model(&models.APIToken{}).Where("id = ?", root.ID).Update("revoked_at", time.Now().UTC()).Error; err != nil {
			t.Fatal(err)
		}
		p2, err := s.Authenticate(bearerRequest(childSecret))
		wantUnauthorized(t, "child of a revoked token", p2, err)

		// Depth: the chain stops at MaxTokenDepth.
		secret, _, err := s.IssueToken(ctx, u, "top", time.Hour, false)
		if err != nil {
			t.Fatal(err)
		}
		for depth := 1; ; depth++ {
			p, err := s.Authenticate(bearerRequest(secret))
			if err != nil {
				t.Fatalf("depth %d: %v", depth, err)
			}
			next, _, err := s.IssueTokenFor(ctx, p, "next", time.Hour, false)
			if depth > auth.MaxTokenDepth {
				if !apperr.Is(err, apperr.PermissionDenied) {
					t.Fatalf("depth %d: %v, want PermissionDenied", depth, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("depth %d: %v", depth, err)
			}
			secret = next
		}
	})
}
