// Package users manages service users: creation, updates, passwords and
// listing, with the validation shared by the CLI and the API. Every write
// calls auth.UsersChanged, so the user rows auth caches for Basic
// authentication in this process are dropped at once; a new user-writing
// function must do the same.
package users

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
)

// Store manages users in the database.
type Store struct {
	DB     *gorm.DB
	Levels auth.Levels
}

// Spec describes a user to create or the fields to change (nil = keep).
type Spec struct {
	Username     *string         `json:"username,omitempty"`
	Password     *string         `json:"password,omitempty"`
	Roles        *[]string       `json:"roles,omitempty"`
	Permissions  *[]string       `json:"permissions,omitempty"`
	Attributes   *map[string]any `json:"attributes,omitempty"`
	Clearance    *string         `json:"clearance,omitempty"`
	Organization *string         `json:"organization,omitempty"`
	Disabled     *bool           `json:"disabled,omitempty"`
	QuotaBytes   *int64          `json:"quota_bytes,omitempty"`
	Email        *string         `json:"email,omitempty"`
}

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)

// MinPasswordLen is the shortest accepted password.
const MinPasswordLen = 8

// MaxOrganizationLen is the longest organization, in characters.
const MaxOrganizationLen = models.MaxOrganizationLen

func (s *Store) check(sp Spec) error {
	if sp.Username != nil && !usernameRE.MatchString(*sp.Username) {
		return apperr.New(apperr.InvalidArgument, "username must be 1-128 characters of letters, digits, '.', '_', '@' or '-', starting with a letter or digit")
	}
	if sp.Username != nil && isUUID(*sp.Username) {
		// Users are addressed by id or name: a UUID-shaped name would be
		// taken for an id (and could be another user's id).
		return apperr.New(apperr.InvalidArgument, "username %q looks like a user id; usernames must not be UUIDs", *sp.Username).
			WithDetails(apperr.Detail{Field: "username", Reason: "format", Message: "a username must not be a UUID"})
	}
	if sp.Password != nil && len(*sp.Password) < MinPasswordLen {
		return apperr.New(apperr.InvalidArgument, "password must be at least %d characters", MinPasswordLen)
	}
	if sp.Clearance != nil {
		if err := s.Levels.Check("clearance", *sp.Clearance); err != nil {
			return apperr.New(apperr.InvalidArgument, "%v", err)
		}
	}
	for _, list := range []struct {
		name string
		v    *[]string
	}{{"roles", sp.Roles}, {"permissions", sp.Permissions}} {
		if list.v == nil {
			continue
		}
		for i, x := range *list.v {
			if strings.TrimSpace(x) == "" {
				return apperr.New(apperr.InvalidArgument, "%s[%d] is empty", list.name, i)
			}
		}
	}
	if sp.Organization != nil {
		// The column is varchar(128) on Postgres: longer values would fail
		// there as a 500 instead of being refused here.
		if n := utf8.RuneCountInString(*sp.Organization); n > MaxOrganizationLen {
			return apperr.New(apperr.InvalidArgument, "organization must be at most %d characters, got %d", MaxOrganizationLen, n).
				WithDetails(apperr.Detail{Field: "organization", Reason: "too_long", Message: fmt.Sprintf("at most %d characters", MaxOrganizationLen)})
		}
		if !utf8.ValidString(*sp.Organization) {
			return apperr.New(apperr.InvalidArgument, "organization must be valid UTF-8").
				WithDetails(apperr.Detail{Field: "organization", Reason: "encoding", Message: "invalid UTF-8"})
		}
	}
	if err := checkEmail(sp.Email); err != nil {
		return err
	}
	if sp.QuotaBytes != nil && *sp.QuotaBytes < 0 {
		return apperr.New(apperr.InvalidArgument, "quota_bytes must be >= 0 (0 = server default)")
	}
	return nil
}

// Create adds a user; username and password are required.
func (s *Store) Create(ctx context.Context, sp Spec) (*models.User, error) {
	if sp.Username == nil || sp.Password == nil {
		return nil, apperr.New(apperr.InvalidArgument, "username and password are required")
	}
	if err := s.check(sp); err != nil {
		return nil, err
	}
	u := &models.User{ID: uuid.NewString(), Username: *sp.Username, Clearance: s.Levels.Lowest()}
	if err := apply(u, sp); err != nil {
		return nil, err
	}
	err := s.DB.WithContext(ctx).Create(u).Error
	auth.UsersChanged()
	if err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return nil, apperr.New(apperr.Conflict, "user %q already exists", *sp.Username)
		}
		return nil, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

func apply(u *models.User, sp Spec) error {
	if sp.Username != nil {
		u.Username = *sp.Username
	}
	if sp.Password != nil {
		h, err := auth.HashPassword(*sp.Password)
		if err != nil {
			return err
		}
		u.PasswordHash = h
		u.PasswordEpoch++
	}
	if sp.Roles != nil {
		u.Roles.V = *sp.Roles
	}
	if sp.Permissions != nil {
		u.Permissions.V = *sp.Permissions
	}
	if sp.Attributes != nil {
		u.Attributes.V = *sp.Attributes
	}
	if sp.Clearance != nil {
		u.Clearance = *sp.Clearance
	}
	if sp.Organization != nil {
		u.Organization = *sp.Organization
	}
	if sp.Disabled != nil {
		u.Disabled = *sp.Disabled
	}
	if sp.Email != nil {
		u.Email = *sp.Email
	}
	if sp.QuotaBytes != nil {
		u.QuotaBytes = *sp.QuotaBytes
	}
	return nil
}

// isUUID reports whether s parses as a UUID in any form uuid.Parse takes.
func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil
}

// Get finds a user by id (anything that parses as a UUID) or username.
func (s *Store) Get(ctx context.Context, idOrName string) (*models.User, error) {
	var u models.User
	q := s.DB.WithContext(ctx)
	if id, err := uuid.Parse(idOrName); err == nil {
		q = q.Where("id = ?", id.String())
	} else {
		q = q.Where("username = ?", idOrName)
	}
	err := q.Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.UserNotFound, "user %q not found", idOrName)
	}
	if err != nil {
		return nil, fmt.Errorf("get user: %w", err)
	}
	return &u, nil
}

// Update changes the fields set in sp.
func (s *Store) Update(ctx context.Context, idOrName string, sp Spec) (*models.User, error) {
	if err := s.check(sp); err != nil {
		return nil, err
	}
	var out *models.User
	err := s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		u, err := (&Store{DB: tx, Levels: s.Levels}).Get(ctx, idOrName)
		if err != nil {
			return err
		}
		if err := apply(u, sp); err != nil {
			return err
		}
		if err := tx.Save(u).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return apperr.New(apperr.Conflict, "username %q is taken", u.Username)
			}
			return fmt.Errorf("save user: %w", err)
		}
		out = u
		return nil
	})
	// After the commit: authentication caches user rows (auth.Service),
	// and a disabled user or a changed password must count at once.
	auth.UsersChanged()
	return out, err
}

// List returns users ordered by username.
func (s *Store) List(ctx context.Context, offset, limit int) ([]models.User, error) {
	var us []models.User
	err := s.DB.WithContext(ctx).Order("username").Offset(offset).Limit(limit).Find(&us).Error
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return us, nil
}

// Count returns the number of users.
func (s *Store) Count(ctx context.Context) (int64, error) {
	var n int64
	err := s.DB.WithContext(ctx).Model(&models.User{}).Count(&n).Error
	return n, err
}

// checkEmail accepts a bare address (user@example.org) or "" to clear it:
// no display name, nothing that could smuggle a second header.
func checkEmail(e *string) error {
	if e == nil || *e == "" {
		return nil
	}
	a, err := mail.ParseAddress(*e)
	if err != nil || a.Address != *e || len(*e) > 254 {
		return apperr.New(apperr.InvalidArgument, "email must be a plain address such as user@example.org").
			WithDetails(apperr.Detail{Field: "email", Reason: "format", Message: "not a plain e-mail address"})
	}
	return nil
}
