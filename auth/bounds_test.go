package auth

import (
	"fmt"
	"testing"
)

// The remembered password verifications never exceed verifyCacheMax, however
// many distinct users and passwords succeed within the TTL (issue 20).
func TestVerifyCacheBounded(t *testing.T) {
	s := NewService(nil, Options{})
	for i := 0; i < 3*verifyCacheMax; i++ {
		s.remember(s.cacheMAC(fmt.Sprint(i), "hash", "password"))
		if n := len(s.cache); n > verifyCacheMax {
			t.Fatalf("%d verifications remembered, bound %d", n, verifyCacheMax)
		}
	}
}
