package app_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestBranchHidesWhatItsOwnerCanNoLongerRead: a branch links a ticket to a
// confidential team; once the owner's clearance is lowered, reading the
// branch shows neither the step's request nor the link to the team (the
// read rule holds for every object a step mentions, link ends included).
func TestBranchHidesWhatItsOwnerCanNoLongerRead(t *testing.T) {
	c := startDev(t, "")
	f := newRevertFixture(t, c)
	var alice idOnly
	c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "alice", "password": "alice-password-1",
		"clearance": "confidential"}, &alice)
	ticket := f.object("Ticket", map[string]any{"title": "w1"}, "")
	team := f.object("Team", map[string]any{"name": "red team"}, "confidential")
	a := c.as("alice", "alice-password-1")
	st, m := wi{c}.doAs("alice", "alice-password-1", "POST", "/api/v1/ontology/actions/"+f.attach+"/what-if",
		jsonMap{"target_object_id": ticket, "parameters": jsonMap{"team": team}})
	if st != http.StatusCreated {
		t.Fatalf("what-if: %d %v", st, m)
	}
	branch := m["branch_id"].(string)
	var before struct {
		Diff struct {
			Links []jsonMap `json:"links"`
		} `json:"diff"`
	}
	a.must(http.StatusOK, "GET", "/api/v1/ontology/branches/"+branch, nil, &before)
	if len(before.Diff.Links) != 1 {
		t.Fatalf("the owner's branch shows links %v, want the one it made", before.Diff.Links)
	}

	c.must(http.StatusOK, "PATCH", "/api/v1/users/"+alice.ID, map[string]any{"clearance": "public"}, nil)
	var after struct {
		Steps []jsonMap `json:"executions"`
		Diff  struct {
			Links []jsonMap `json:"links"`
		} `json:"diff"`
	}
	a.must(http.StatusOK, "GET", "/api/v1/ontology/branches/"+branch, nil, &after)
	if len(after.Diff.Links) != 0 {
		t.Errorf("the branch still shows a link to the team: %v", after.Diff.Links)
	}
	if len(after.Steps) != 1 || after.Steps[0]["redacted"] != true || after.Steps[0]["parameters"] != nil {
		t.Errorf("the step is not redacted: %v", after.Steps)
	}
	// Apply judges the team, which alice may no longer read, as a missing
	// object: refused, saying neither that it is there nor how it changed.
	c.must(http.StatusOK, "PATCH", "/api/v1/ontology/types/Team/objects/"+team, map[string]any{"properties": map[string]any{"name": "blue team"}}, nil)
	st, b := a.do("POST", "/api/v1/ontology/branches/"+branch+"/apply", map[string]any{})
	if st != http.StatusConflict || !strings.Contains(string(b), "deleted") || strings.Contains(string(b), "updated") {
		t.Errorf("apply: %d %s", st, b)
	}
}
