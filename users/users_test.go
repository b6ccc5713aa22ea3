package users_test

import (
	"context"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/users"
)

func ptr[T any](v T) *T { return &v }

func TestCreateAndUpdate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := &users.Store{DB: db, Levels: auth.DefaultLevels}
		u, err := st.Create(ctx, users.Spec{
			Username: ptr("alice"), Password: ptr("alice-password"),
			Roles: ptr([]string{"analyst"}), Permissions: ptr([]string{"ontology:write"}),
			Attributes: ptr(map[string]any{"region": "eu"}), Clearance: ptr("confidential"),
			Organization: ptr("acme"), QuotaBytes: ptr(int64(1 << 20)),
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.Get(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != u.ID || got.Clearance != "confidential" || got.Organization != "acme" || got.QuotaBytes != 1<<20 ||
			got.Attributes.V["region"] != "eu" || !got.HasRole("analyst") || got.PasswordHash == "alice-password" {
			t.Errorf("stored user = %+v", got)
		}
		if byID, err := st.Get(ctx, u.ID); err != nil || byID.Username != "alice" {
			t.Errorf("get by id: %v %v", byID, err)
		}
		// Defaults: lowest clearance, no roles.
		b, err := st.Create(ctx, users.Spec{Username: ptr("bob"), Password: ptr("bob-password")})
		if err != nil || b.Clearance != "public" {
			t.Fatalf("bob: %+v %v", b, err)
		}
		upd, err := st.Update(ctx, "bob", users.Spec{Clearance: ptr("pii"), Disabled: ptr(true)})
		if err != nil || upd.Clearance != "pii" || !upd.Disabled {
			t.Fatalf("update: %+v %v", upd, err)
		}
		if n, err := st.Count(ctx); err != nil || n != 2 {
			t.Errorf("count = %d, %v", n, err)
		}
		list, err := st.List(ctx, 0, 10)
		if err != nil || len(list) != 2 || list[0].Username != "alice" {
			t.Errorf("list = %v, %v", list, err)
		}
	})
}

func TestRefusals(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := &users.Store{DB: db, Levels: auth.DefaultLevels}
		if _, err := st.Create(ctx, users.Spec{Username: ptr("alice"), Password: ptr("alice-password")}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Create(ctx, users.Spec{Username: ptr("carl"), Password: ptr("carl-password")}); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			spec users.Spec
			code apperr.Code
		}{
			{"no password", users.Spec{Username: ptr("x1")}, apperr.InvalidArgument},
			{"no username", users.Spec{Password: ptr("long-enough")}, apperr.InvalidArgument},
			{"bad username", users.Spec{Username: ptr("../etc"), Password: ptr("long-enough")}, apperr.InvalidArgument},
			{"short password", users.Spec{Username: ptr("x2"), Password: ptr("short")}, apperr.InvalidArgument},
			{"unknown clearance", users.Spec{Username: ptr("x3"), Password: ptr("long-enough"), Clearance: ptr("secret")}, apperr.InvalidArgument},
			{"empty role", users.Spec{Username: ptr("x4"), Password: ptr("long-enough"), Roles: ptr([]string{" "})}, apperr.InvalidArgument},
			{"empty permission", users.Spec{Username: ptr("x5"), Password: ptr("long-enough"), Permissions: ptr([]string{""})}, apperr.InvalidArgument},
			{"negative quota", users.Spec{Username: ptr("x6"), Password: ptr("long-enough"), QuotaBytes: ptr(int64(-1))}, apperr.InvalidArgument},
			{"organization too long", users.Spec{Username: ptr("x7"), Password: ptr("long-enough"), Organization: ptr(strings.Repeat("o", 129))}, apperr.InvalidArgument},
			{"organization too long in runes", users.Spec{Username: ptr("x8"), Password: ptr("long-enough"), Organization: ptr(strings.Repeat("é", 129))}, apperr.InvalidArgument},
			{"organization not UTF-8", users.Spec{Username: ptr("x9"), Password: ptr("long-enough"), Organization: ptr("acme\xff")}, apperr.InvalidArgument},
			{"UUID username", users.Spec{Username: ptr("0b6c1a52-8f7e-4d7a-9a53-2f1f0e8b9c11"), Password: ptr("long-enough")}, apperr.InvalidArgument},
			{"upper-case UUID username", users.Spec{Username: ptr("0B6C1A52-8F7E-4D7A-9A53-2F1F0E8B9C11"), Password: ptr("long-enough")}, apperr.InvalidArgument},
			{"UUID username without hyphens", users.Spec{Username: ptr("0b6c1a528f7e4d7a9a532f1f0e8b9c11"), Password: ptr("long-enough")}, apperr.InvalidArgument},
			{"duplicate", users.Spec{Username: ptr("alice"), Password: ptr("long-enough")}, apperr.Conflict},
		}
		for _, c := range cases {
			if _, err := st.Create(ctx, c.spec); !apperr.Is(err, c.code) {
				t.Errorf("%s: err = %v, want %s", c.name, err, c.code)
			}
		}
		if _, err := st.Update(ctx, "nobody", users.Spec{Disabled: ptr(true)}); !apperr.Is(err, apperr.UserNotFound) {
			t.Errorf("update unknown: %v", err)
		}
		if _, err := st.Update(ctx, "carl", users.Spec{Username: ptr("alice")}); !apperr.Is(err, apperr.Conflict) {
			t.Errorf("rename onto a taken name: %v", err)
		}
		alice, err := st.Get(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		// Renaming carl to alice's id would make "GET /users/<alice's id>"
		// ambiguous.
		if _, err := st.Update(ctx, "carl", users.Spec{Username: ptr(alice.ID)}); !apperr.Is(err, apperr.InvalidArgument) {
			t.Errorf("rename to another user's id: %v", err)
		}
		if got, err := st.Get(ctx, strings.ToUpper(alice.ID)); err != nil || got.Username != "alice" {
			t.Errorf("get by upper-case id: %v %v", got, err)
		}
		// Names that only resemble ids are fine.
		if _, err := st.Create(ctx, users.Spec{Username: ptr("0b6c1a52-8f7e"), Password: ptr("long-enough")}); err != nil {
			t.Errorf("username that is not a UUID: %v", err)
		}
		if _, err := st.Update(ctx, "carl", users.Spec{Organization: ptr(strings.Repeat("o", 129))}); !apperr.Is(err, apperr.InvalidArgument) {
			t.Errorf("update to an organization of 129 characters: %v", err)
		}
		// 128 characters (multi-byte ones too) fit the column on both dialects.
		for _, org := range []string{strings.Repeat("o", 128), strings.Repeat("é", 128)} {
			if u, err := st.Update(ctx, "carl", users.Spec{Organization: ptr(org)}); err != nil || u.Organization != org {
				t.Errorf("update to an organization of 128 characters: %v", err)
			}
			if got, err := st.Get(ctx, "carl"); err != nil || got.Organization != org {
				t.Errorf("stored organization = %q, %v", got.Organization, err)
			}
		}
	})
}
