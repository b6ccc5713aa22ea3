package engine

import (
	"fmt"
	"strings"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
)

// Reasons of PermissionDenied refusals (apperr.Detail.Reason).
const (
	ReasonDisabled   = "actor_disabled"
	ReasonPermission = "missing_permission"
	ReasonRole       = "missing_role"
	ReasonGroup      = "missing_group"
	ReasonAttribute  = "attribute_mismatch"
	ReasonClearance  = "insufficient_clearance"
	ReasonGuest      = "guest_session"
	ReasonMarking    = "marking_not_allowed"
)

func denied(reason, field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return apperr.New(apperr.PermissionDenied, "%s", msg).WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

// authorize checks the actor and the target against the action's policy.
// The admin role holds every permission key (as everywhere in Ontoflow) and
// may read every target; role, attribute, clearance, guest and marking rules
// apply to admins too, since a policy names them on purpose. With
// enforceJustification a blank justification of a confirmation_required
// action is refused.
func (e *Engine) authorize(in *input, enforceJustification bool) error {
	u, p := in.Actor, in.Action.Policy
	if u.Disabled {
		return denied(ReasonDisabled, "", "user %s is disabled", u.Username)
	}
	if p.DenyGuestSessions && in.Guest {
		return denied(ReasonGuest, "policy.deny_guest_sessions", "action %s may not be run from a guest session", in.Action.Name)
	}
	keys := p.RequiredPermissionKeys
	if p.PermissionKey != "" {
		keys = append([]string{p.PermissionKey}, keys...)
	}
	for _, k := range keys {
		if !auth.HasPermission(u, k) {
			return denied(ReasonPermission, k, "permission %q is required to run action %s", k, in.Action.Name)
		}
	}
	if len(p.AnyRole) > 0 {
		ok := false
		for _, r := range p.AnyRole {
			ok = ok || u.HasRole(r)
		}
		if !ok {
			return denied(ReasonRole, "policy.any_role", "one of the roles %s is required", strings.Join(p.AnyRole, ", "))
		}
	}
	if len(p.AnyGroup) > 0 && !u.InAnyGroup(p.AnyGroup) {
		return denied(ReasonGroup, "policy.any_group", "membership of one of the groups %s is required", strings.Join(p.AnyGroup, ", "))
	}
	for _, r := range p.AllRoles {
		if !u.HasRole(r) {
			return denied(ReasonRole, r, "role %q is required", r)
		}
	}
	for k, want := range p.AttributeEquals {
		got, ok := u.Attributes.V[k]
		if !ok || !domain.ValuesEqual(got, want) {
			return denied(ReasonAttribute, k, "attribute %q must equal %v", k, want)
		}
	}
	if p.MinimumClearance != "" && !e.levels.Dominates(u.Clearance, p.MinimumClearance) {
		return denied(ReasonClearance, "policy.minimum_clearance", "clearance %q is below the required %q", u.Clearance, p.MinimumClearance)
	}
	if t := in.Target; t != nil {
		// load already refused a target the actor may not read (as a
		// missing one), so naming its marking here tells nothing new.
		if len(p.AllowedMarkings) > 0 && !contains(p.AllowedMarkings, t.Marking) {
			return denied(ReasonMarking, "target.marking", "the target's marking %q is not one of %s", t.Marking, strings.Join(p.AllowedMarkings, ", "))
		}
	}
	if enforceJustification && p.ConfirmationRequired && strings.TrimSpace(in.Justification) == "" {
		return apperr.New(apperr.JustificationRequired, "action %s requires a justification", in.Action.Name).
			WithDetails(apperr.Detail{Field: "justification", Reason: "required", Message: "a non-blank justification is required"})
	}
	return nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
