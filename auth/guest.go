package auth

import "github.com/ontoflow/ontoflow/apperr"

// ReasonGuestSession is the detail reason of a refusal to a guest session.
const ReasonGuestSession = "guest_session"

// ReasonAppPassword is the detail reason of a refusal to an app password.
const ReasonAppPassword = "app_password"

// RequireFullSession refuses a guest session: a guest token (and every
// token it issues) is a reduced credential, and whatever creates or changes
// credentials or privileges — user accounts, passwords, roles,
// permissions, clearance, organizations, and secrets once they exist — is
// out of its reach whatever its user's roles, the admin role included.
// Every route of that kind calls it first; what is such a route is listed
// in docs/security.md.
//
// An app password is refused the same way: it is a device's credential
// for files (and, scoped so, the API), not the account's.
func RequireFullSession(p *Principal, what string) error {
	if p != nil && p.AppPasswordID != "" {
		msg := "an app password may not " + what + "; sign in with your account"
		return apperr.New(apperr.PermissionDenied, "%s", msg).
			WithDetails(apperr.Detail{Reason: ReasonAppPassword, Message: msg})
	}
	if p == nil || !p.Guest {
		return nil
	}
	msg := "a guest session may not " + what
	return apperr.New(apperr.PermissionDenied, "%s", msg).
		WithDetails(apperr.Detail{Reason: ReasonGuestSession, Message: msg})
}
