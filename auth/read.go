package auth

import "github.com/ontoflow/ontoflow/models"

// ReadScope is the one definition of which objects a user may read: every
// object (the admin role), or the objects of the user's organization whose
// marking is at most the user's clearance. Both forms of the read rule are
// derived from it, so they cannot drift apart: Allows (the Go predicate of
// the REST routes, the action engine and the action log) and SQL (the
// WHERE clause of object and link listings). docs/security.md lists every
// path that applies it.
type ReadScope struct {
	// All is true for admins.
	All bool
	// Markings are the markings the user may read (empty: none, e.g. a
	// clearance that is not a configured level).
	Markings []string
	// Organization is the only organization whose objects the user reads.
	Organization string
}

// ReadScope is u's read scope under the configured levels; a nil user
// reads nothing.
func (ls Levels) ReadScope(u *models.User) ReadScope {
	if u == nil {
		return ReadScope{}
	}
	if u.IsAdmin() {
		return ReadScope{All: true}
	}
	rank := ls.Rank(u.Clearance)
	marks := make([]string, 0, rank+1)
	for i := 0; i <= rank; i++ {
		marks = append(marks, ls[i])
	}
	return ReadScope{Markings: marks, Organization: u.Organization}
}

// CanRead reports whether u may read an object of marking and
// organization.
func (ls Levels) CanRead(u *models.User, marking, organization string) bool {
	return ls.ReadScope(u).Allows(marking, organization)
}

// Allows reports whether an object of marking and organization is in the
// scope.
func (sc ReadScope) Allows(marking, organization string) bool {
	if sc.All {
		return true
	}
	if organization != sc.Organization {
		return false
	}
	for _, m := range sc.Markings {
		if m == marking {
			return true
		}
	}
	return false
}

// SQL is the scope as a WHERE condition over the marking and organization
// columns of table (an objects table or its alias), with its arguments.
// Plain comparisons: the same text on SQLite and Postgres.
func (sc ReadScope) SQL(table string) (string, []any) {
	switch {
	case sc.All:
		return "1 = 1", nil
	case len(sc.Markings) == 0:
		return "1 = 0", nil
	}
	return "(" + table + ".marking IN ? AND " + table + ".organization = ?)", []any{sc.Markings, sc.Organization}
}
