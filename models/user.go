package models

import "time"

var userModels = []any{&User{}, &APIToken{}, &AppPassword{}, &NotificationSettings{}, &IdPSession{}}

// User is a service user: the same account logs in to the API and WebDAV.
// MaxOrganizationLen is the longest organization, in characters: the size
// of the organization columns of users and objects.
const MaxOrganizationLen = 128

type User struct {
	ID           string `gorm:"primaryKey;size:36" json:"id"`
	Username     string `gorm:"uniqueIndex;size:128;not null" json:"username"`
	PasswordHash string `gorm:"size:256;not null" json:"-"`
	// PasswordEpoch changes with every password change, so cached
	// verifications and issued tokens of the old password die with it.
	PasswordEpoch int64                `gorm:"not null;default:0" json:"-"`
	Roles         JSON[[]string]       `json:"roles"`
	Permissions   JSON[[]string]       `json:"permissions"`
	Attributes    JSON[map[string]any] `json:"attributes"`
	Clearance     string               `gorm:"size:64;not null" json:"clearance"`
	Organization  string               `gorm:"size:128;index" json:"organization"` // at most MaxOrganizationLen
	// Email is where the email notification channel delivers ("" = none).
	Email      string                  `gorm:"size:254" json:"email,omitempty"`
	Disabled   bool                    `gorm:"not null;default:false" json:"disabled"`
	QuotaBytes int64                   `gorm:"not null;default:0" json:"quota_bytes"`
	CreatedAt  time.Time               `json:"created_at"`
	UpdatedAt  time.Time               `json:"updated_at"`
	Extra      JSON[map[string]string] `json:"-"`
	// OIDCIssuer and OIDCSubject name the identity provider's account of a
	// user who signs in with OpenID Connect (nil for service users): the
	// subject is the stable key, so a renamed account stays the same user.
	OIDCIssuer  *string `gorm:"column:oidc_issuer;size:255;uniqueIndex:idx_users_oidc,priority:1" json:"-"`
	OIDCSubject *string `gorm:"column:oidc_subject;size:255;uniqueIndex:idx_users_oidc,priority:2" json:"oidc_subject,omitempty"`
}

// HasRole reports whether u has role r.
func (u *User) HasRole(r string) bool {
	for _, x := range u.Roles.V {
		if x == r {
			return true
		}
	}
	return false
}

// GroupsAttribute is the attribute holding a user's groups: set from the
// identity provider's groups claim at every sign-in, or by an admin for a
// service user (local groups).
const GroupsAttribute = "groups"

// Groups are u's groups (the strings of its groups attribute).
func (u *User) Groups() []string {
	var out []string
	switch v := u.Attributes.V[GroupsAttribute].(type) {
	case []string:
		out = append(out, v...)
	case []any:
		for _, g := range v {
			if s, ok := g.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// InAnyGroup reports whether u is in one of groups.
func (u *User) InAnyGroup(groups []string) bool {
	for _, g := range u.Groups() {
		for _, want := range groups {
			if g == want {
				return true
			}
		}
	}
	return false
}

// IsAdmin reports whether u holds the admin role.
func (u *User) IsAdmin() bool { return u.HasRole("admin") }

// APIToken is a bearer token issued by the service. Only a SHA-256 of the
// secret is stored; the secret is shown once, when it is issued.
type APIToken struct {
	ID         string     `gorm:"primaryKey;size:36" json:"id"`
	UserID     string     `gorm:"size:36;index;not null" json:"user_id"`
	Name       string     `gorm:"size:128" json:"name"`
	SecretHash string     `gorm:"uniqueIndex;size:64;not null" json:"-"`
	Guest      bool       `gorm:"not null;default:false" json:"guest"`
	ExpiresAt  time.Time  `gorm:"index" json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	// PasswordEpoch of the user when the token was issued: a password
	// change revokes every older token.
	PasswordEpoch int64 `gorm:"not null;default:0" json:"-"`
	// Ancestors are the ids of the tokens this one was issued through,
	// its parent last (empty for a token issued with a password): it
	// expires no later than its parent and dies with any of them.
	Ancestors  JSON[[]string] `json:"-"`
	CreatedAt  time.Time      `json:"created_at"`
	LastUsedAt *time.Time     `json:"last_used_at,omitempty"`
}

// App password scopes: where an app password is accepted.
const (
	// AppScopeWebDAV admits the app password on WebDAV only.
	AppScopeWebDAV = "webdav"
	// AppScopeWebDAVAPI admits it on WebDAV and on the API's Basic.
	AppScopeWebDAVAPI = "webdav+api"
)

// AppPassword is a per-device password a user creates for a WebDAV client
// or a program, used with the username over HTTP Basic. The secret is
// "ofa_" + Lookup + the rest: Lookup finds the row without trying every
// hash, and the whole secret is verified against an argon2id Hash, as
// account passwords are. It is shown once, when it is created.
type AppPassword struct {
	ID     string `gorm:"primaryKey;size:36" json:"id"`
	UserID string `gorm:"size:36;not null;uniqueIndex:idx_app_password_lookup,priority:1" json:"user_id"`
	Name   string `gorm:"size:128;not null" json:"name"`
	Lookup string `gorm:"size:16;not null;uniqueIndex:idx_app_password_lookup,priority:2" json:"-"`
	Hash   string `gorm:"size:256;not null" json:"-"`
	// Scope is AppScopeWebDAV or AppScopeWebDAVAPI.
	Scope      string     `gorm:"size:16;not null" json:"scope"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// IdPSession ties a console session (its API token) that began with a
// sign-in at the identity provider to that provider's session: the
// provider's refresh token, sealed with the secret key under the token's
// id, and when to ask the provider next (the ID token's expiry). A
// session whose provider no longer refreshes it, or whose user it no
// longer admits, ends there (auth/oidc CheckSession).
type IdPSession struct {
	TokenID string `gorm:"primaryKey;size:36"`
	UserID  string `gorm:"size:36;not null;index"`
	// Refresh is the sealed refresh token; "" when the provider gave none
	// or no secret key is configured: the session then ends at CheckAt.
	Refresh string    `gorm:"size:8192;not null;default:''"`
	CheckAt time.Time `gorm:"not null"`
}
