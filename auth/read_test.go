package auth_test

import (
	"fmt"
	"sort"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// The read rule's Go predicate and its SQL form agree on every principal ×
// object of a table spanning markings, organizations (the empty one
// included), clearances (an unknown one included) and the admin role.
func TestReadRuleGoAndSQLAgree(t *testing.T) {
	levels := auth.DefaultLevels
	principals := map[string]*models.User{
		"nil":                  nil,
		"admin-no-clearance":   {ID: "a1", Roles: models.NewJSON([]string{"admin"}), Clearance: "bogus"},
		"admin-other-org":      {ID: "a2", Roles: models.NewJSON([]string{"admin", "ops"}), Clearance: "public", Organization: "globex"},
		"public-acme":          {ID: "u1", Clearance: "public", Organization: "acme"},
		"confidential-acme":    {ID: "u2", Clearance: "confidential", Organization: "acme"},
		"pii-acme":             {ID: "u3", Clearance: "pii", Organization: "acme"},
		"pii-globex":           {ID: "u4", Clearance: "pii", Organization: "globex"},
		"pii-no-org":           {ID: "u5", Clearance: "pii", Organization: ""},
		"unknown-clearance":    {ID: "u6", Clearance: "secret", Organization: "acme"},
		"permissions-not-role": {ID: "u7", Clearance: "public", Organization: "acme", Permissions: models.NewJSON([]string{"*:*"})},
	}
	type obj struct{ marking, org string }
	var objs []obj
	for _, m := range append([]string{"unknown-marking"}, levels...) {
		for _, o := range []string{"acme", "globex", "", "ACME"} {
			objs = append(objs, obj{m, o})
		}
	}
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ids := map[string]obj{}
		for i, o := range objs {
			id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			ids[id] = o
			row := models.Object{ID: id, ObjectTypeID: "00000000-0000-4000-8000-ffffffffffff", Marking: o.marking, Organization: o.org}
			if err := db.Create(&row).Error; err != nil {
				t.Fatal(err)
			}
		}
		for name, u := range principals {
			sc := levels.ReadScope(u)
			var want []string
			for id, o := range ids {
				if levels.CanRead(u, o.marking, o.org) != sc.Allows(o.marking, o.org) {
					t.Fatalf("%s: CanRead and ReadScope.Allows disagree", name)
				}
				if sc.Allows(o.marking, o.org) {
					want = append(want, id)
				}
			}
			cond, args := sc.SQL("o")
			var got []string
			if err := db.Table("objects AS o").Where(cond, args...).Pluck("o.id", &got).Error; err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sort.Strings(want)
			sort.Strings(got)
			if fmt.Sprint(want) != fmt.Sprint(got) {
				t.Errorf("%s: Go reads %d objects %v, SQL %d %v", name, len(want), want, len(got), got)
			}
		}
		// Spot checks of the rule itself, so agreement is not agreement on
		// a wrong rule.
		for _, c := range []struct {
			who, marking, org string
			want              bool
		}{
			{"admin-no-clearance", "pii", "globex", true},
			{"public-acme", "public", "acme", true},
			{"public-acme", "confidential", "acme", false},
			{"confidential-acme", "confidential", "acme", true},
			{"pii-acme", "pii", "globex", false},
			{"pii-acme", "pii", "ACME", false},
			{"pii-no-org", "public", "", true},
			{"pii-no-org", "public", "acme", false},
			{"unknown-clearance", "public", "acme", false},
			{"permissions-not-role", "confidential", "acme", false},
			{"nil", "public", "", false},
			{"pii-acme", "unknown-marking", "acme", false},
		} {
			if got := levels.CanRead(principals[c.who], c.marking, c.org); got != c.want {
				t.Errorf("%s reading %s/%q: %v, want %v", c.who, c.marking, c.org, got, c.want)
			}
		}
	})
}
