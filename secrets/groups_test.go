package secrets_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

// A use policy may name groups (the user's groups attribute: the
// identity provider's groups claim, or a service user's local groups):
// their members may reference the secret, others may not; the list is
// checked, kept and replaced like the role list.
func TestUseGroups(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := secrets.NewStore(db, keyring(t, secrets.GenerateKey()))
		admin := newUser(t, db, "admin", "admin")
		member, other := newUser(t, db, "member"), newUser(t, db, "other")
		for u, groups := range map[*models.User][]any{member: {"integrations", "staff"}, other: {"staff"}} {
			u.Attributes = models.NewJSON(map[string]any{models.GroupsAttribute: groups})
			if err := db.Save(u).Error; err != nil {
				t.Fatal(err)
			}
		}
		row, err := st.Create(ctx, "CRM", secrets.Spec{Value: ptr("v"), UseGroups: list("integrations"), Destinations: list("crm.example.com")}, admin.ID)
		if err != nil || len(row.UseGroups.V) != 1 {
			t.Fatalf("create: %+v %v", row, err)
		}
		use := []domain.SecretUse{webhookUse("config.operation.headers.A", "CRM", "https://crm.example.com/x")}
		if err := st.CheckUses(ctx, member, use); err != nil {
			t.Errorf("a member of the group: %v", err)
		}
		if err := st.CheckUses(ctx, other, use); !apperr.Is(err, apperr.PermissionDenied) {
			t.Errorf("not a member: %v", err)
		}
		if _, err := st.Update(ctx, "CRM", secrets.Spec{UseGroups: list("")}, admin.ID); !apperr.Is(err, apperr.InvalidArgument) {
			t.Errorf("an empty group name: %v", err)
		}
		if _, err := st.Update(ctx, "CRM", secrets.Spec{UseGroups: list("staff")}, admin.ID); err != nil {
			t.Fatal(err)
		}
		if err := st.CheckUses(ctx, other, use); err != nil {
			t.Errorf("after the policy names staff: %v", err)
		}
	})
}
