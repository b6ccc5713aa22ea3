package auth

import (
	"fmt"
	"testing"

	"github.com/ontoflow/ontoflow/models"
)

// The remembered password verifications never exceed verifyCacheMax, however
// many distinct users and passwords succeed within the TTL (issue 20).
func TestVerifyCacheBounded(t *testing.T) {
	s := NewService(nil, Options{})
	for i := 0; i < 3*verifyCacheMax; i++ {
		s.remember(&models.User{ID: fmt.Sprint(i), PasswordHash: "hash"}, "password")
		if n := len(s.cache); n > verifyCacheMax {
			t.Fatalf("%d verifications remembered, bound %d", n, verifyCacheMax)
		}
	}
}
