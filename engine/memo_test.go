package engine

import (
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/models"
)

// An entry left behind by an execution that never reached its last step
// is swept by a later put once it is past memoTTL, without waiting for the
// memo to fill up to memoMax (issue 20).
func TestMemoSweepsLeftovers(t *testing.T) {
	var m memo
	m.put(&models.Execution{ID: "live"}, &input{})
	m.entries["left"] = memoEntry{ex: &models.Execution{ID: "left"}, in: &input{}, when: time.Now().Add(-memoTTL - time.Second)}
	m.lastSweep = time.Now().Add(-memoTTL - time.Second)
	m.put(&models.Execution{ID: "next"}, &input{})
	if _, ok := m.entries["left"]; ok {
		t.Error("an entry past its TTL is still held")
	}
	if _, _, ok := m.get("live"); !ok {
		t.Error("a fresh entry was swept")
	}
}
