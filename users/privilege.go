package users

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
)

// Privilege rules of the API (the CLI is the operator and is not bound by
// them). The admin role may do anything. A holder of users:admin without
// it manages ordinary accounts of its own organization:
//
//   - it never sets what grants access — roles, permissions, attributes
//     (action policies match them), clearance or organization — except
//     their defaults on create (no roles, permissions or attributes, the
//     lowest clearance, its own organization);
//   - it changes only accounts that hold nothing it does not hold itself
//     (no role, permission or attribute beyond its own, clearance at most
//     its own, the same organization) and not its own account: setting
//     a password is taking an account over, which must not reach more
//     than the manager already has.
//
// Both create and update go through here, so no path grants more than the
// other.

func denyPrivilege(msg string) error {
	return apperr.New(apperr.PermissionDenied, "%s", msg).
		WithDetails(apperr.Detail{Reason: "privilege", Message: msg})
}

// CheckCreate refuses an account actor may not create as sp describes; it
// fills in actor's organization for a non-admin actor.
func (s *Store) CheckCreate(actor *models.User, sp *Spec) error {
	if actor.IsAdmin() {
		return nil
	}
	switch {
	case sp.Roles != nil && len(*sp.Roles) > 0,
		sp.Permissions != nil && len(*sp.Permissions) > 0,
		sp.Attributes != nil && len(*sp.Attributes) > 0,
		sp.Clearance != nil && *sp.Clearance != s.Levels.Lowest(),
		sp.Organization != nil && *sp.Organization != actor.Organization:
		return denyPrivilege("only an admin may create an account with roles, permissions, attributes, a clearance above the lowest, or another organization")
	}
	org := actor.Organization
	sp.Organization = &org
	return nil
}

// CheckUpdate refuses a change actor may not make to account idOrName.
func (s *Store) CheckUpdate(ctx context.Context, actor *models.User, idOrName string, sp Spec) error {
	if actor.IsAdmin() {
		return nil
	}
	if sp.Roles != nil || sp.Permissions != nil || sp.Attributes != nil || sp.Clearance != nil || sp.Organization != nil {
		return denyPrivilege("only an admin may change roles, permissions, attributes, clearance or organization")
	}
	target, err := s.Get(ctx, idOrName)
	if err != nil {
		return err
	}
	if target.ID == actor.ID || s.exceeds(target, actor) {
		return denyPrivilege("only an admin may change an admin's account, their own, or one that holds more than they do (roles, permissions, attributes, clearance, another organization)")
	}
	return nil
}

// exceeds reports whether u holds anything than other does not.
func (s *Store) exceeds(u, other *models.User) bool {
	if u.IsAdmin() || u.Organization != other.Organization || !s.Levels.Dominates(other.Clearance, u.Clearance) {
		return true
	}
	for _, r := range u.Roles.V {
		if !other.HasRole(r) {
			return true
		}
	}
	for _, p := range u.Permissions.V {
		if !auth.HasPermission(other, p) {
			return true
		}
	}
	for k, v := range u.Attributes.V {
		ov, ok := other.Attributes.V[k]
		if !ok || !jsonEqual(v, ov) {
			return true
		}
	}
	return false
}

// jsonEqual compares two attribute values by their JSON (object members
// are marshalled in key order).
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
