package secrets_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

func list(s ...string) *[]string { return &s }

func newUser(t *testing.T, db *gorm.DB, name string, roles ...string) *models.User {
	t.Helper()
	u := &models.User{ID: uuid.NewString(), Username: name, PasswordHash: "x", Clearance: "public", Roles: models.NewJSON(roles)}
	if err := db.Create(u).Error; err != nil {
		t.Fatal(err)
	}
	return u
}

func webhookUse(field, name, url string) domain.SecretUse {
	return domain.SecretUse{Field: field, Name: name, URL: url}
}

// TestCheckUses: who may reference a secret in a definition (admins, the
// users and roles its policy names; by default its creator), and where a
// webhook may send it (its destinations; its channel binding).
func TestCheckUses(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := secrets.NewStore(db, keyring(t, secrets.GenerateKey()))
		admin, integrator, mallory := newUser(t, db, "admin", "admin"), newUser(t, db, "integrator", "integrations"), newUser(t, db, "mallory")
		mk := func(name string, by *models.User, sp secrets.Spec) {
			sp.Value = ptr("value-of-" + name)
			if _, err := st.Create(ctx, name, sp, by.ID); err != nil {
				t.Fatal(err)
			}
		}
		mk("CRM_TOKEN", admin, secrets.Spec{UseRoles: list("integrations"), Destinations: list("https://crm.example.com/api/", "127.0.0.1:9000")})
		mk("ADMIN_ONLY", admin, secrets.Spec{Destinations: list("crm.example.com")})
		mk("MINE", mallory, secrets.Spec{Destinations: list("https://mallory.example.com/")})
		mk("NO_DEST", admin, secrets.Spec{})
		mk("SLACK_OPS", admin, secrets.Spec{Channel: ptr("slack"), UseRoles: list("integrations")})

		const inside, outside = "https://crm.example.com/api/tickets/{{ parameters.id }}", "https://evil.example.net/collect"
		hdr := "config.operation.headers.Authorization"
		cases := []struct {
			name    string
			definer *models.User
			uses    []domain.SecretUse
			code    apperr.Code
			field   string
			reason  string
		}{
			{"admin, inside", admin, []domain.SecretUse{webhookUse(hdr, "ADMIN_ONLY", "https://crm.example.com/x")}, "", "", ""},
			{"role, inside", integrator, []domain.SecretUse{webhookUse(hdr, "CRM_TOKEN", inside)}, "", "", ""},
			{"role, loopback port", integrator, []domain.SecretUse{webhookUse(hdr, "CRM_TOKEN", "http://127.0.0.1:9000/h")}, "", "", ""},
			{"creator by default", mallory, []domain.SecretUse{webhookUse(hdr, "MINE", "https://mallory.example.com/in")}, "", "", ""},
			{"not named: the exfiltration", mallory, []domain.SecretUse{webhookUse("config.operation.headers.X-Steal", "CRM_TOKEN", "https://mallory.example.com/in")},
				apperr.PermissionDenied, "config.operation.headers.X-Steal", "secret_use_denied"},
			{"not named though inside", mallory, []domain.SecretUse{webhookUse(hdr, "ADMIN_ONLY", "https://crm.example.com/x")},
				apperr.PermissionDenied, hdr, "secret_use_denied"},
			{"no user", nil, []domain.SecretUse{webhookUse(hdr, "CRM_TOKEN", inside)}, apperr.PermissionDenied, hdr, "secret_use_denied"},
			{"403 before 400", mallory, []domain.SecretUse{webhookUse("config.operation.body", "MINE", outside), webhookUse(hdr, "CRM_TOKEN", inside)},
				apperr.PermissionDenied, hdr, "secret_use_denied"},
			{"outside", integrator, []domain.SecretUse{webhookUse(hdr, "CRM_TOKEN", outside)}, apperr.InvalidDefinition, hdr, "secret_destination"},
			{"other port", integrator, []domain.SecretUse{webhookUse(hdr, "CRM_TOKEN", "http://127.0.0.1:9001/h")}, apperr.InvalidDefinition, hdr, "secret_destination"},
			{"other loopback address", integrator, []domain.SecretUse{webhookUse(hdr, "CRM_TOKEN", "http://127.0.0.2:9000/h")}, apperr.InvalidDefinition, hdr, "secret_destination"},
			{"no destinations", admin, []domain.SecretUse{webhookUse(hdr, "NO_DEST", inside)}, apperr.InvalidDefinition, hdr, "secret_destination"},
			{"chat secret in a webhook", admin, []domain.SecretUse{webhookUse(hdr, "SLACK_OPS", inside)}, apperr.InvalidDefinition, hdr, "secret_channel"},
			{"chat secret as its channel", integrator, []domain.SecretUse{{Field: "config.notification_side_effects[0].slack_webhook", Name: "SLACK_OPS", Channel: "slack"}}, "", "", ""},
			{"chat secret as another channel", admin, []domain.SecretUse{{Field: "config.notification_side_effects[0].teams_webhook", Name: "SLACK_OPS", Channel: "teams"}},
				apperr.InvalidDefinition, "config.notification_side_effects[0].teams_webhook", "secret_channel"},
			{"webhook secret as a chat destination", admin, []domain.SecretUse{{Field: "config.notification_side_effects[0].slack_webhook", Name: "CRM_TOKEN", Channel: "slack"}},
				apperr.InvalidDefinition, "config.notification_side_effects[0].slack_webhook", "secret_channel"},
			{"missing", admin, []domain.SecretUse{webhookUse(hdr, "NOPE", inside)}, apperr.InvalidDefinition, hdr, "missing_secret"},
			{"a user's own", admin, []domain.SecretUse{{Field: "config.notification_side_effects[0].slack_webhook", Name: "USER_x_slack", Channel: "slack"}},
				apperr.InvalidDefinition, "config.notification_side_effects[0].slack_webhook", "missing_secret"},
		}
		for _, c := range cases {
			err := st.CheckUses(ctx, c.definer, c.uses)
			if c.code == "" {
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
				continue
			}
			e, ok := apperr.As(err)
			if !ok || e.Code != c.code || len(e.Details) != 1 || e.Details[0].Field != c.field || e.Details[0].Reason != c.reason {
				t.Errorf("%s: %#v, want %s %s %s", c.name, err, c.code, c.field, c.reason)
			}
		}
	})
}

// TestUsePolicySpec: the policy members are checked, normalised, kept
// when an update leaves them out, and default to the creator alone.
func TestUsePolicySpec(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := secrets.NewStore(db, keyring(t, secrets.GenerateKey()))
		alice := newUser(t, db, "alice")
		row, err := st.Create(ctx, "A", secrets.Spec{Value: ptr("v")}, alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(row.UseUsers.V, []string{alice.ID}) || len(row.UseRoles.V) != 0 || len(row.Destinations.V) != 0 || row.Channel != "" {
			t.Fatalf("defaults: %+v", row)
		}
		row, err = st.Update(ctx, "A", secrets.Spec{Destinations: list("HTTPS://Crm.Example.com:443/api", "crm.example.com", "crm.example.com"), UseRoles: list("ops", "ops")}, alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(row.Destinations.V, []string{"https://crm.example.com/api", "crm.example.com"}) ||
			!reflect.DeepEqual(row.UseRoles.V, []string{"ops"}) || !reflect.DeepEqual(row.UseUsers.V, []string{alice.ID}) {
			t.Fatalf("after update: %+v", row)
		}
		if v, err := st.Resolve(ctx, "A"); err != nil || v != "v" {
			t.Fatalf("a policy update changed the value: %q %v", v, err)
		}
		for name, sp := range map[string]secrets.Spec{
			"unknown user":     {UseUsers: list(uuid.NewString())},
			"bad destination":  {Destinations: list("ftp://x/")},
			"query in prefix":  {Destinations: list("https://x/?a=1")},
			"bad channel":      {Channel: ptr("email")},
			"empty role":       {UseRoles: list("")},
			"too many":         {Destinations: list(make([]string, 33)...)},
			"multi-line role":  {UseRoles: list("a\nb")},
			"nothing to do":    {},
			"empty user list?": {UseUsers: list("")},
		} {
			if _, err := st.Update(ctx, "A", sp, alice.ID); apperr.CodeOf(err) != apperr.InvalidArgument {
				t.Errorf("%s: %v", name, err)
			}
		}
		got, _ := st.Get(ctx, "A")
		if !reflect.DeepEqual(got.Destinations.V, row.Destinations.V) || !reflect.DeepEqual(got.UseRoles.V, row.UseRoles.V) {
			t.Fatalf("a refused update changed the policy: %+v", got)
		}
		p, err := st.UsePolicy(ctx, "A")
		if err != nil || len(p.Destinations) != 2 || p.ChannelError("A", "") != nil || p.ChannelError("A", "slack") == nil {
			t.Fatalf("UsePolicy: %+v %v", p, err)
		}
	})
}

// secretV1 is the secrets table as the version before use policies
// wrote it (8d37de5 and later, up to this change).
type secretV1 struct {
	ID          string `gorm:"primaryKey;size:36"`
	Name        string `gorm:"uniqueIndex;size:64;not null"`
	Description string `gorm:"size:1024"`
	Ciphertext  []byte `gorm:"not null"`
	KeyID       string `gorm:"size:16;not null;index"`
	CreatedBy   string `gorm:"size:36"`
	UpdatedBy   string `gorm:"size:36"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (secretV1) TableName() string { return "secrets" }

// TestMigratePolicies builds a database as the older version left it —
// secrets without a use policy, action types that use them — and checks
// what the startup migration makes of them: admins only, and the
// destinations (or the chat channel) of the action types that use them
// today; values untouched; a second run changes nothing.
func TestMigratePolicies(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		keys := keyring(t, secrets.GenerateKey())
		creator := newUser(t, db, "creator")
		// Seal the values as any version does (the format is unchanged),
		// then put them in the old table.
		names := []string{"CRM_TOKEN", "CRM_SIGNING", "SLACK_OPS", "MIXED", "UNUSED", "USER_" + creator.ID + "_slack"}
		sealed := map[string]models.Secret{}
		st := secrets.NewStore(db, keys)
		for _, n := range names {
			if secrets.Reserved(n) {
				if err := st.PutOwned(ctx, n, "value-of-"+n, "", creator.ID); err != nil {
					t.Fatal(err)
				}
			} else if _, err := st.Create(ctx, n, secrets.Spec{Value: ptr("value-of-" + n)}, creator.ID); err != nil {
				t.Fatal(err)
			}
			var row models.Secret
			db.Where("name = ?", n).Take(&row)
			sealed[n] = row
		}
		if err := db.Migrator().DropTable(&models.Secret{}); err != nil {
			t.Fatal(err)
		}
		if err := db.AutoMigrate(&secretV1{}); err != nil {
			t.Fatal(err)
		}
		testdb.AsOlderBinaryLeftIt(t, db)
		for _, n := range names {
			r := sealed[n]
			if err := db.Create(&secretV1{ID: r.ID, Name: n, Ciphertext: r.Ciphertext, KeyID: r.KeyID, CreatedBy: creator.ID, UpdatedBy: creator.ID}).Error; err != nil {
				t.Fatal(err)
			}
		}
		action := func(name, kind string, op map[string]any, sides ...domain.NotificationSideEffect) {
			raw, _ := json.Marshal(op)
			at := &models.ActionType{ID: uuid.NewString(), Name: name, OperationKind: kind, Version: 1,
				Config: models.NewNumJSON(domain.ActionConfig{Operation: raw, NotificationSideEffects: sides})}
			if err := db.Create(at).Error; err != nil {
				t.Fatal(err)
			}
		}
		action("crm_sync", domain.KindInvokeWebhook, map[string]any{"url": "http://127.0.0.1:9000/crm/{{ parameters.id }}?x=1",
			"headers": map[string]string{"Authorization": "Bearer {{ secrets.CRM_TOKEN }}"}, "signing_secret": "{{ secrets.CRM_SIGNING }}"})
		action("crm_audit", domain.KindInvokeWebhook, map[string]any{"url": "https://audit.example.com/in", "body": `{"t":"{{ secrets.CRM_TOKEN }}"}`},
			domain.NotificationSideEffect{Title: "t", Channels: []string{"slack"}, Destinations: map[string]string{"slack": "{{ secrets.SLACK_OPS }}"}})
		action("mixed", domain.KindInvokeWebhook, map[string]any{"url": "https://mixed.example.com/x/{{ secrets.MIXED }}"},
			domain.NotificationSideEffect{Title: "t", Channels: []string{"teams"}, Destinations: map[string]string{"teams": "{{ secrets.MIXED }}"}})
		action("plain", domain.KindUpdateObject, map[string]any{})

		// The upgrade: the schema migration, then the startup one.
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		var pending int64
		db.Model(&models.Secret{}).Where("policy_set = ?", false).Count(&pending)
		if pending != int64(len(names)) {
			t.Fatalf("%d old rows read as without a policy, want %d", pending, len(names))
		}
		// Until migrated, an old row is admins only with no destination.
		if p, err := st.UsePolicy(ctx, "CRM_TOKEN"); err != nil || len(p.Destinations) != 0 || p.MayUse(creator) {
			t.Fatalf("unmigrated policy: %+v %v", p, err)
		}
		uses := kinds.Registry().Domain().SecretUses
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		n, err := secrets.MigratePolicies(ctx, db, log, uses)
		if err != nil || n != len(names) {
			t.Fatalf("migrate: %d %v", n, err)
		}
		want := map[string]struct {
			dests   []string
			channel string
		}{
			"CRM_TOKEN":   {[]string{"http://127.0.0.1:9000/crm/", "https://audit.example.com/in"}, ""},
			"CRM_SIGNING": {[]string{"http://127.0.0.1:9000/crm/"}, ""},
			"SLACK_OPS":   {[]string{}, "slack"},
			"MIXED":       {[]string{"https://mixed.example.com/x/"}, ""}, // its teams use is lost (logged)
			"UNUSED":      {[]string{}, ""},
		}
		for name, w := range want {
			row, err := st.Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			got := append([]string(nil), row.Destinations.V...)
			if !sameSet(got, w.dests) || row.Channel != w.channel || len(row.UseUsers.V) != 0 || len(row.UseRoles.V) != 0 || !row.PolicySet {
				t.Errorf("%s: destinations %v channel %q users %v roles %v set %v; want %v %q, admins only",
					name, got, row.Channel, row.UseUsers.V, row.UseRoles.V, row.PolicySet, w.dests, w.channel)
			}
			if v, err := st.Resolve(ctx, name); err != nil || v != "value-of-"+name {
				t.Errorf("%s after migration: %q %v", name, v, err)
			}
			p, _ := st.UsePolicy(ctx, name)
			if p.MayUse(creator) || !p.MayUse(&models.User{ID: "x", Roles: models.NewJSON([]string{"admin"})}) {
				t.Errorf("%s: not admins only", name)
			}
		}
		// The migrated destinations let the action types saved before the
		// upgrade be saved again by an admin unchanged.
		admin := &models.User{ID: "admin", Roles: models.NewJSON([]string{"admin"})}
		var ats []models.ActionType
		db.Find(&ats)
		for _, at := range ats {
			d := domain.ActionDefinition{Name: at.Name, OperationKind: at.OperationKind, Config: at.Config.V}
			u := uses(d)
			if at.Name == "mixed" {
				continue
			}
			if err := st.CheckUses(ctx, admin, u); err != nil {
				t.Errorf("action type %s after migration: %v", at.Name, err)
			}
		}
		if n, err := secrets.MigratePolicies(ctx, db, log, uses); err != nil || n != 0 {
			t.Fatalf("second run: %d %v", n, err)
		}
	})
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}
