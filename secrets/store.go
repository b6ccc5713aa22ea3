// Package secrets holds named secret values (webhook URLs, API tokens,
// signing keys) encrypted at rest with AES-256-GCM, and the means to use
// them without leaking them: configurations carry only references of the
// form {{ secrets.NAME }}, an Expander resolves them at the last moment
// (inside the activity that makes the call) and redacts the values from
// anything recorded or logged afterwards.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/channelspec"
	"github.com/ontoflow/ontoflow/internal/printable"
	"github.com/ontoflow/ontoflow/models"
)

// Permissions of the secrets API.
const (
	PermRead  = "secrets:read"
	PermWrite = "secrets:write"
)

// Limits on what a secret holds.
const (
	MaxValueBytes       = 64 << 10
	MaxDescriptionChars = 1024
)

var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// ValidName reports whether name may name a secret: a letter or
// underscore, then up to 63 letters, digits or underscores (so a
// reference {{ secrets.NAME }} never needs quoting).
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Resolver turns a secret's name into its value. The Store is one; an
// Expander wraps one and remembers what it resolved.
type Resolver interface {
	Resolve(ctx context.Context, name string) (string, error)
}

// Store keeps secrets in the database. Metadata needs no key; storing and
// resolving values need the keyring (without one they answer ErrNoKey).
type Store struct {
	db   *gorm.DB
	keys *Keyring
	// InUse, when set, is asked before a delete; an error refuses it (the
	// engine can answer DependentsExist naming the action types that
	// reference the secret).
	InUse func(ctx context.Context, name string) error
	// Channels are the notification channels a secret may be bound to
	// (those that post to a destination; nil: the built-in ones).
	Channels *channelspec.Registry
}

// NewStore returns a Store over db; keys may be nil (no key configured).
func NewStore(db *gorm.DB, keys *Keyring) *Store { return &Store{db: db, keys: keys} }

// Spec is what a create or an update sets; nil members are left alone on
// update. The use policy's members (UseRoles, UseUsers, Destinations,
// Channel) default on create to the creator alone, no destination and no
// channel (policy.go).
type Spec struct {
	Value        *string   `json:"value"`
	Description  *string   `json:"description"`
	UseRoles     *[]string `json:"use_roles"`
	UseUsers     *[]string `json:"use_users"`
	UseGroups    *[]string `json:"use_groups"`
	Destinations *[]string `json:"destinations"`
	Channel      *string   `json:"channel"`
}

// setsPolicy reports whether sp changes the use policy.
func (sp Spec) setsPolicy() bool {
	return sp.UseRoles != nil || sp.UseUsers != nil || sp.UseGroups != nil || sp.Destinations != nil || sp.Channel != nil
}

func notFound(name string) error {
	return apperr.New(apperr.SecretNotFound, "secret %q not found", name).
		WithDetails(apperr.Detail{Field: "name", Reason: "not_found", Message: "no secret is named " + name})
}

func checkName(name string) error {
	if !ValidName(name) {
		return apperr.New(apperr.InvalidArgument, "secret name %q is invalid: a letter or underscore, then up to 63 letters, digits or underscores", name).
			WithDetails(apperr.Detail{Field: "name", Reason: "invalid", Message: "must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$"})
	}
	return nil
}

func checkSpec(sp Spec, create bool) error {
	if sp.Value == nil && create {
		return apperr.New(apperr.InvalidArgument, "value is required").
			WithDetails(apperr.Detail{Field: "value", Reason: "required", Message: "required"})
	}
	if sp.Value == nil && sp.Description == nil && !sp.setsPolicy() {
		return apperr.New(apperr.InvalidArgument, "nothing to update: give value, description or a member of the use policy")
	}
	if v := sp.Value; v != nil {
		switch {
		case *v == "":
			return apperr.New(apperr.InvalidArgument, "value must not be empty").
				WithDetails(apperr.Detail{Field: "value", Reason: "empty", Message: "must not be empty"})
		case len(*v) > MaxValueBytes:
			return apperr.New(apperr.InvalidArgument, "value exceeds %d bytes", MaxValueBytes).
				WithDetails(apperr.Detail{Field: "value", Reason: "too_long", Message: fmt.Sprintf("at most %d bytes", MaxValueBytes)})
		}
	}
	if d := sp.Description; d != nil {
		if utf8.RuneCountInString(*d) > MaxDescriptionChars || !printable.String(*d) {
			return apperr.New(apperr.InvalidArgument, "description must be one line of text of at most %d characters", MaxDescriptionChars).
				WithDetails(apperr.Detail{Field: "description", Reason: "invalid", Message: "text of at most 1024 characters"})
		}
	}
	return nil
}

// UserPrefix starts the names of secrets owned by a user (their own chat
// destinations, users.Notifications): the secrets API neither shows nor
// changes them, and no action may reference them, so nobody but their
// owner can read, redirect or exfiltrate them.
const UserPrefix = "USER_"

// Reserved reports whether name belongs to a user (UserPrefix).
func Reserved(name string) bool { return strings.HasPrefix(strings.ToUpper(name), UserPrefix) }

// Create stores a new secret; a name already taken is Conflict.
func (s *Store) Create(ctx context.Context, name string, sp Spec, by string) (*models.Secret, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if Reserved(name) {
		return nil, apperr.New(apperr.InvalidArgument, "secret names starting with %s are reserved for users' own destinations", UserPrefix).
			WithDetails(apperr.Detail{Field: "name", Reason: "reserved", Message: "reserved prefix " + UserPrefix})
	}
	return s.create(ctx, name, sp, by)
}

func (s *Store) create(ctx context.Context, name string, sp Spec, by string) (*models.Secret, error) {
	if err := checkSpec(sp, true); err != nil {
		return nil, err
	}
	if s.keys == nil {
		return nil, ErrNoKey
	}
	ct, kid, err := s.keys.seal(name, *sp.Value)
	if err != nil {
		return nil, err
	}
	row := &models.Secret{ID: uuid.NewString(), Name: name, Ciphertext: ct, KeyID: kid, CreatedBy: by, UpdatedBy: by, PolicySet: true}
	if sp.Description != nil {
		row.Description = *sp.Description
	}
	if err := s.applyPolicy(ctx, row, sp, true, by); err != nil {
		return nil, err
	}
	if err := s.db.WithContext(ctx).Create(row).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return nil, apperr.New(apperr.Conflict, "a secret named %q already exists", name).
				WithDetails(apperr.Detail{Field: "name", Reason: "duplicate", Message: "already exists"})
		}
		return nil, fmt.Errorf("store secret %q: %w", name, err)
	}
	return row, nil
}

// Update replaces the value and/or the description of a secret.
func (s *Store) Update(ctx context.Context, name string, sp Spec, by string) (*models.Secret, error) {
	if Reserved(name) {
		return nil, notFound(name)
	}
	return s.update(ctx, name, sp, by)
}

func (s *Store) update(ctx context.Context, name string, sp Spec, by string) (*models.Secret, error) {
	if err := checkSpec(sp, false); err != nil {
		return nil, err
	}
	if sp.Value != nil && s.keys == nil {
		return nil, ErrNoKey
	}
	row, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	set := map[string]any{"updated_by": by}
	if sp.Value != nil {
		ct, kid, err := s.keys.seal(name, *sp.Value)
		if err != nil {
			return nil, err
		}
		set["ciphertext"], set["key_id"] = ct, kid
	}
	if sp.Description != nil {
		set["description"] = *sp.Description
	}
	if sp.setsPolicy() {
		if err := s.applyPolicy(ctx, row, sp, false, ""); err != nil {
			return nil, err
		}
		set["use_roles"], set["use_users"], set["destinations"] = row.UseRoles, row.UseUsers, row.Destinations
		set["use_groups"] = row.UseGroups
		set["channel"], set["policy_set"] = row.Channel, true
	}
	res := s.db.WithContext(ctx).Model(&models.Secret{}).Where("id = ?", row.ID).Updates(set)
	if res.Error != nil {
		return nil, fmt.Errorf("update secret %q: %w", name, res.Error)
	}
	if res.RowsAffected == 0 { // deleted meanwhile
		return nil, notFound(name)
	}
	return s.get(ctx, name)
}

// Get reads a secret's metadata (its Ciphertext too, never shown); a
// user's own secret is not found.
func (s *Store) Get(ctx context.Context, name string) (*models.Secret, error) {
	if Reserved(name) {
		return nil, notFound(name)
	}
	return s.get(ctx, name)
}

func (s *Store) get(ctx context.Context, name string) (*models.Secret, error) {
	if !ValidName(name) {
		return nil, notFound(name)
	}
	var row models.Secret
	err := s.db.WithContext(ctx).Where("name = ?", name).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read secret %q: %w", name, err)
	}
	normalise(&row)
	return &row, nil
}

// List reads secrets' metadata by name.
func (s *Store) List(ctx context.Context, offset, limit int) ([]models.Secret, error) {
	var rows []models.Secret
	err := s.db.WithContext(ctx).Omit("ciphertext").Where("UPPER(name) NOT LIKE ?", UserPrefix+"%").
		Order("name").Offset(offset).Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	for i := range rows {
		normalise(&rows[i])
	}
	return rows, nil
}

// PutOwned stores or replaces the value of a user's own secret (name
// Reserved), which the secrets API does not reach.
func (s *Store) PutOwned(ctx context.Context, name, value, description, by string) error {
	if !Reserved(name) {
		return apperr.New(apperr.Internal, "secret %q is not a user's own", name)
	}
	sp := Spec{Value: &value, Description: &description}
	_, err := s.update(ctx, name, sp, by)
	if apperr.Is(err, apperr.SecretNotFound) {
		_, err = s.create(ctx, name, sp, by)
	}
	return err
}

// DeleteOwned removes a user's own secret (absent is fine).
func (s *Store) DeleteOwned(ctx context.Context, name string) error {
	if !Reserved(name) {
		return apperr.New(apperr.Internal, "secret %q is not a user's own", name)
	}
	if err := s.db.WithContext(ctx).Where("name = ?", name).Delete(&models.Secret{}).Error; err != nil {
		return fmt.Errorf("delete secret %q: %w", name, err)
	}
	return nil
}

// Delete removes a secret (after InUse, when set, agrees).
func (s *Store) Delete(ctx context.Context, name string) error {
	if Reserved(name) {
		return notFound(name)
	}
	if _, err := s.Get(ctx, name); err != nil {
		return err
	}
	if s.InUse != nil {
		if err := s.InUse(ctx, name); err != nil {
			return err
		}
	}
	res := s.db.WithContext(ctx).Where("name = ?", name).Delete(&models.Secret{})
	if res.Error != nil {
		return fmt.Errorf("delete secret %q: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return notFound(name)
	}
	return nil
}

// Resolve decrypts the value of the secret name. A missing secret is
// SecretNotFound; a value the keyring cannot open is an internal error
// (wrong or missing key), logged by the caller, never shown.
func (s *Store) Resolve(ctx context.Context, name string) (string, error) {
	if Reserved(name) {
		return "", notFound(name)
	}
	return s.resolve(ctx, name)
}

// ResolveOwned decrypts a user's own secret (Reserved): for delivering to
// that user's destination, never for a definition's references.
func (s *Store) ResolveOwned(ctx context.Context, name string) (string, error) {
	if !Reserved(name) {
		return "", notFound(name)
	}
	return s.resolve(ctx, name)
}

func (s *Store) resolve(ctx context.Context, name string) (string, error) {
	row, err := s.get(ctx, name)
	if err != nil {
		return "", err
	}
	if s.keys == nil {
		return "", ErrNoKey
	}
	return s.keys.open(name, row.KeyID, row.Ciphertext)
}

// Missing returns the names among names that no secret has.
func (s *Store) Missing(ctx context.Context, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var found []string
	if err := s.db.WithContext(ctx).Model(&models.Secret{}).Where("name IN ?", names).Pluck("name", &found).Error; err != nil {
		return nil, fmt.Errorf("look up secrets: %w", err)
	}
	have := map[string]bool{}
	for _, n := range found {
		have[n] = true
	}
	var out []string
	for _, n := range names {
		if !have[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// CheckRefs is the definition-time check of a text that may hold secret
// references: a malformed reference or one to a secret that does not
// exist is InvalidActionTypeDefinition (400) with a detail naming member
// (e.g. "operation.headers.Authorization") and the secret.
func (s *Store) CheckRefs(ctx context.Context, member, text string) error {
	names, bad := parseRefs(text)
	if len(bad) > 0 {
		return apperr.New(apperr.InvalidDefinition, "%s: %q is not a valid secret reference; write {{ secrets.NAME }}", member, bad[0]).
			WithDetails(apperr.Detail{Field: member, Reason: "invalid_secret_reference", Message: fmt.Sprintf("invalid secret reference %q", bad[0])})
	}
	for _, n := range names {
		if Reserved(n) {
			// Answered as a missing secret: a definition must not learn
			// which users have destinations.
			return apperr.New(apperr.InvalidDefinition, "%s references the secret %q, which does not exist", member, n).
				WithDetails(apperr.Detail{Field: member, Reason: "missing_secret", Message: "secret " + n + " does not exist"})
		}
	}
	missing, err := s.Missing(ctx, names)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		e := apperr.New(apperr.InvalidDefinition, "%s references the secret %q, which does not exist", member, missing[0])
		for _, m := range missing {
			e = e.WithDetails(apperr.Detail{Field: member, Reason: "missing_secret", Message: "secret " + m + " does not exist"})
		}
		return e
	}
	return nil
}

// RotateKey re-encrypts, under the keyring's primary key, every secret
// sealed with another key it holds, and returns how many it re-encrypted.
// Each row is rewritten on its own, guarded by its old key id, so running
// it again (or beside a server) is safe.
func (s *Store) RotateKey(ctx context.Context) (int, error) {
	if s.keys == nil {
		return 0, ErrNoKey
	}
	n := 0
	for {
		var rows []models.Secret
		err := s.db.WithContext(ctx).Where("key_id <> ?", s.keys.PrimaryID()).Order("id").Limit(100).Find(&rows).Error
		if err != nil {
			return n, fmt.Errorf("read secrets to re-encrypt: %w", err)
		}
		if len(rows) == 0 {
			return n, nil
		}
		for _, r := range rows {
			if err := s.reseal(ctx, r); err != nil {
				return n, err
			}
			n++
		}
	}
}

func (s *Store) reseal(ctx context.Context, r models.Secret) error {
	v, err := s.keys.open(r.Name, r.KeyID, r.Ciphertext)
	if err != nil {
		return err
	}
	ct, kid, err := s.keys.seal(r.Name, v)
	if err != nil {
		return err
	}
	err = s.db.WithContext(ctx).Model(&models.Secret{}).Where("id = ? AND key_id = ?", r.ID, r.KeyID).
		Updates(map[string]any{"ciphertext": ct, "key_id": kid}).Error
	if err != nil {
		return fmt.Errorf("re-encrypt secret %q: %w", r.Name, err)
	}
	return nil
}
