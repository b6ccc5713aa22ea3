package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/automations"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/users"
)

// TestAutomationsAPI drives /api/v1/automations over real HTTP: a bad
// definition is a 400 in the error shape naming the member with nothing
// saved; a good one round-trips, pauses, and is invisible to another user.
func TestAutomationsAPI(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		us := &users.Store{DB: db, Levels: auth.DefaultLevels}
		var ownerID string
		for _, name := range []string{"alice", "bob"} {
			n, pw, roles := name, ontoPassword, []string{"admin"}
			u, err := us.Create(ctx, users.Spec{Username: &n, Password: &pw, Roles: &roles})
			if err != nil {
				t.Fatal(err)
			}
			if name == "alice" {
				ownerID = u.ID
			}
		}
		store := ontology.NewStore(db, nil, kinds.Registry().Domain())
		ticket, err := store.CreateObjectType(ctx, ownerID, ontology.ObjectTypeSpec{Name: "Ticket",
			Properties: []ontology.PropertySpec{{Name: "status", Type: domain.T(domain.TypeString)}}})
		if err != nil {
			t.Fatal(err)
		}
		d := domain.ActionDefinition{Name: "escalate", ObjectTypeID: ticket.ID, OperationKind: "update_object",
			Inputs: []domain.InputField{{Name: "status", Type: domain.T(domain.TypeString), Required: true}},
			Config: domain.ActionConfig{Operation: []byte(`{"property_mappings":[{"property":"status","input":"status"}]}`)}}
		if _, err := store.CreateActionType(ctx, ownerID, d); err != nil {
			t.Fatal(err)
		}
		srv := api.New(api.Deps{Users: us, Auth: auth.NewService(db, auth.Options{}), Levels: auth.DefaultLevels,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Routes: []func(*gin.RouterGroup){api.AutomationRoutes(&automations.Store{DB: db, Actions: store})}})
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		env := &secretsEnv{t: t, url: ts.URL + "/api/v1"}

		good := `{"name":"up","action_type":"escalate","trigger":{"kind":"object","object_type":"Ticket","on":["updated"]},"parameters":{"status":"escalated"}}`
		bad := map[string]string{
			"trigger.cron":      `{"name":"c","action_type":"escalate","trigger":{"kind":"schedule","cron":"not cron"},"parameters":{"status":"x"}}`,
			"action_type":       `{"name":"a","action_type":"nope","trigger":{"kind":"schedule","interval":"1h"},"parameters":{"status":"x"}}`,
			"parameters.status": `{"name":"p","action_type":"escalate","trigger":{"kind":"schedule","interval":"1h"}}`,
		}
		for member, body := range bad {
			r := env.do("alice", "POST", "/automations", body)
			msg, _ := r.body["error"].(map[string]any)["message"].(string)
			if r.status != 400 || r.code() != "InvalidArgument" || !strings.HasPrefix(msg, member+":") {
				t.Errorf("%s: %d %s", member, r.status, r.raw)
			}
		}
		var n int64
		if db.Model(&models.Automation{}).Count(&n); n != 0 {
			t.Fatalf("%d automations saved by refused requests", n)
		}
		r := env.do("alice", "POST", "/automations", good)
		if r.status != 201 || r.body["owner"] != ownerID {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
		id := r.str("id")
		if r := env.do("alice", "POST", "/automations/"+id+"/pause", ""); r.status != 200 || r.body["paused"] != true {
			t.Fatalf("pause: %d %s", r.status, r.raw)
		}
		if r := env.do("bob", "GET", "/automations/"+id, ""); r.status != 404 {
			t.Fatalf("another user read it: %d %s", r.status, r.raw)
		}
		if r := env.do("alice", "GET", "/automations", ""); r.status != 200 || !strings.Contains(r.raw, fmt.Sprintf("%q", id)) {
			t.Fatalf("list: %d %s", r.status, r.raw)
		}
		// Firings: the owner's list (none yet), a bad limit is a 400, and
		// another user's automation's firings are as missing as it.
		if r := env.do("alice", "GET", "/automations/"+id+"/firings", ""); r.status != 200 || r.raw != `{"firings":[]}` {
			t.Fatalf("firings: %d %s", r.status, r.raw)
		}
		if r := env.do("alice", "GET", "/automations/"+id+"/firings?limit=0", ""); r.status != 400 || r.code() != "InvalidArgument" {
			t.Fatalf("firings?limit=0: %d %s", r.status, r.raw)
		}
		if r := env.do("bob", "GET", "/automations/"+id+"/firings", ""); r.status != 404 {
			t.Fatalf("another user's firings: %d %s", r.status, r.raw)
		}
		if r := env.do("alice", "DELETE", "/automations/"+id, ""); r.status != 204 {
			t.Fatalf("delete: %d %s", r.status, r.raw)
		}
	})
}
