package oidc

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// Mapping turns an ID token's claims into a user's name and privileges.
type Mapping struct {
	// UsernameClaim names the claim the username comes from (default
	// preferred_username).
	UsernameClaim string
	// GroupsClaim names the claim holding the groups (default groups).
	GroupsClaim string
	// Roles maps a group to the roles its members get; a user's roles are
	// exactly the union over their groups, set at every sign-in.
	Roles map[string][]string
	// RequiredGroup, when set, admits only its members: a user who is no
	// longer in it is disabled at the sign-in that shows it.
	RequiredGroup string
	// ClearanceClaim names a claim holding the clearance level (empty: the
	// lowest level).
	ClearanceClaim string
}

// Identity is a verified ID token's subject and claims.
type Identity struct {
	Issuer, Subject string
	Claims          map[string]any
	// RefreshToken is the provider's, when it gave one, and Expiry the
	// ID token's: the console session is checked with the provider then
	// (session.go).
	RefreshToken string
	Expiry       time.Time
}

// Groups are the identity's groups (the groups claim, strings only).
func (id *Identity) Groups(m Mapping) []string {
	name := m.GroupsClaim
	if name == "" {
		name = "groups"
	}
	var out []string
	switch v := id.Claims[name].(type) {
	case []any:
		for _, g := range v {
			if s, ok := g.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	case string:
		if v != "" {
			out = []string{v}
		}
	}
	return out
}

func (id *Identity) str(claim string) string {
	s, _ := id.Claims[claim].(string)
	return s
}

// disabledByIdP marks, in User.Extra, an account the IdP's mapping
// disabled: a later sign-in that admits the user again enables it, while
// an account an admin disabled stays disabled.
const disabledByIdP = "disabled_by_oidc"

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)

// ErrNotAdmitted refuses a user the provider's mapping does not admit.
var ErrNotAdmitted = apperr.New(apperr.PermissionDenied, "your account is not admitted to Ontoflow by the identity provider's groups")

// Provision finds the user of id by issuer and subject, creating it at
// the first sign-in, and sets its username, roles, clearance and e-mail
// from the claims (the users store writes only what changed). A user
// outside RequiredGroup is disabled and refused.
func (p *Provider) Provision(ctx context.Context, id *Identity) (*models.User, error) {
	m := p.cfg.Mapping
	groups := id.Groups(m)
	admitted := m.RequiredGroup == "" || slices.Contains(groups, m.RequiredGroup)
	u, err := p.users.SaveIdentity(ctx, id.Issuer, id.Subject, func(u *models.User, isNew bool) error {
		if isNew && !admitted {
			return ErrNotAdmitted
		}
		return p.apply(u, id, groups, admitted, isNew)
	})
	if err != nil {
		return nil, err
	}
	if u.Disabled {
		if !admitted {
			return nil, ErrNotAdmitted
		}
		return nil, apperr.New(apperr.PermissionDenied, "this account is disabled")
	}
	return u, nil
}

// apply sets u's fields from the claims.
func (p *Provider) apply(u *models.User, id *Identity, groups []string, admitted, isNew bool) error {
	m := p.cfg.Mapping
	claim := m.UsernameClaim
	if claim == "" {
		claim = "preferred_username"
	}
	name := id.str(claim)
	if name == "" && !isNew {
		// An access token may carry no username (Entra's do not): the
		// known user keeps theirs; the ID token of a sign-in renames.
		name = u.Username
	}
	if !usernameRE.MatchString(name) || uuid.Validate(name) == nil {
		return apperr.New(apperr.PermissionDenied, "the identity provider's %q claim (%q) is no valid username", claim, name)
	}
	u.Username = name
	roles := map[string]bool{}
	for _, g := range groups {
		for _, r := range m.Roles[g] {
			roles[r] = true
		}
	}
	list := make([]string, 0, len(roles))
	for r := range roles {
		list = append(list, r)
	}
	sort.Strings(list)
	u.Roles = models.NewJSON(list)
	u.Clearance = p.levels.Lowest()
	if m.ClearanceClaim != "" {
		if c := id.str(m.ClearanceClaim); c != "" && p.levels.Valid(c) {
			u.Clearance = c
		}
	}
	if e := id.str("email"); e != "" && id.Claims["email_verified"] == true && len(e) <= 254 {
		u.Email = e
	}
	if u.Attributes.V == nil {
		u.Attributes = models.NewJSON(map[string]any{})
	}
	u.Attributes.V[models.GroupsAttribute] = groups
	if u.Extra.V == nil {
		u.Extra = models.NewJSON(map[string]string{})
	}
	switch {
	case !admitted:
		if !u.Disabled {
			u.Disabled = true
			u.Extra.V[disabledByIdP] = "true"
		}
	case u.Extra.V[disabledByIdP] == "true":
		u.Disabled = false
		delete(u.Extra.V, disabledByIdP)
	}
	return nil
}
