package models

import "time"

// secretModels are the stored secrets (webhook URLs, tokens, signing keys).
var secretModels = []any{&Secret{}}

// Secret is a named value stored encrypted (AES-256-GCM, see package
// secrets); the plaintext is never stored and never returned by the API.
type Secret struct {
	ID          string `gorm:"primaryKey;size:36" json:"-"`
	Name        string `gorm:"uniqueIndex;size:64;not null" json:"name"`
	Description string `gorm:"size:1024" json:"description"`
	// Ciphertext is the GCM nonce followed by the sealed value, with the
	// name as additional data: a row copied under another name does not
	// decrypt.
	Ciphertext []byte `gorm:"not null" json:"-"`
	// KeyID names the key that sealed Ciphertext (a fingerprint, not the
	// key), so a key rotation can find what is left under an old key.
	KeyID string `gorm:"size:16;not null;index" json:"-"`
	// UseRoles and UseUsers (user ids) may reference the secret in a
	// definition, beside admins; Destinations (outbound.Destination
	// entries) are where a webhook may send it; Channel, when set
	// ("slack", "teams"), binds it to that notification channel's
	// destination and nothing else. See docs/security.md, "Secrets".
	UseRoles JSON[[]string] `json:"use_roles"`
	UseUsers JSON[[]string] `json:"use_users"`
	// UseGroups are groups (User.Groups) whose members may use it too.
	UseGroups    JSON[[]string] `json:"use_groups"`
	Destinations JSON[[]string] `json:"destinations"`
	Channel      string         `gorm:"size:16;not null;default:''" json:"channel"`
	// PolicySet is false on rows written before secrets had a use policy,
	// until the startup migration (secrets.MigratePolicies) gives them
	// one; such a row is used as admins only, with no destination.
	PolicySet bool      `gorm:"not null;default:false" json:"-"`
	CreatedBy string    `gorm:"size:36" json:"created_by"`
	UpdatedBy string    `gorm:"size:36" json:"updated_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}
