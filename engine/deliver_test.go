package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications"
	"github.com/ontoflow/ontoflow/notifications/delivery"
	"github.com/ontoflow/ontoflow/ontology"
)

// pager is a remote channel that exists only in this test (a fake, under
// the name of one of the channels a definition may name): it fails with
// a retryable error until told otherwise and counts what it delivered.
type pager struct {
	fail      bool
	delivered []string
}

func (p *pager) Name() string { return "slack" }

func (p *pager) Deliver(ctx context.Context, msgs []delivery.Message, report func(int, delivery.Result)) {
	for i, m := range msgs {
		if p.fail {
			report(i, delivery.Result{Err: errors.New("pager gateway answered 503"), Retryable: true})
			continue
		}
		p.delivered = append(p.delivered, m.Recipient.Username+": "+m.Title)
		report(i, delivery.Result{})
	}
}

type fixture struct {
	db    *gorm.DB
	eng   *engine.Engine
	pager *pager
	exID  string
}

// newFixture stores an object, an update_object action whose side effect
// goes to the actor in-app and by pager, and a queued execution of it.
func newFixture(t *testing.T, db *gorm.DB) *fixture {
	ctx := context.Background()
	levels := auth.Levels{"public", "confidential"}
	ks := kinds.Registry()
	store := ontology.NewStore(db, levels, ks.Domain())
	alice := models.User{ID: "00000000-0000-4000-8000-00000000a11c", Username: "alice", Clearance: "public", Organization: "acme"}
	if err := db.Create(&alice).Error; err != nil {
		t.Fatal(err)
	}
	ot, err := store.CreateObjectType(ctx, alice.ID, ontology.ObjectTypeSpec{Name: "Ticket", PrimaryKey: "title",
		Properties: []ontology.PropertySpec{{Name: "title", Type: domain.PropertyType{Base: domain.TypeString}, Required: true}}})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := store.CreateObject(ctx, nil, ot.ID, map[string]any{"title": "printer on fire"}, "", alice.ID, "acme")
	if err != nil {
		t.Fatal(err)
	}
	var def domain.ActionDefinition
	if err := json.Unmarshal([]byte(`{"name":"escalate","object_type_id":"`+ot.ID+`","operation_kind":"update_object",
		"config":{"operation":{"static_patch":{"title":"escalated"}},
		"notification_side_effects":[{"title":"{{ target.properties.title }} escalated","channels":["in_app","slack"],"send_to_actor":true}]}}`), &def); err != nil {
		t.Fatal(err)
	}
	at, err := store.CreateActionType(ctx, alice.ID, def)
	if err != nil {
		t.Fatal(err)
	}
	p := &pager{fail: true}
	eng := engine.New(engine.Deps{DB: db, Ontology: store, Kinds: ks, Levels: levels, Channels: []engine.Channel{notifications.InApp{}, p}})
	ex := models.Execution{ID: "00000000-0000-4000-8000-0000000e0001", Kind: models.KindExecute, ActionTypeID: at.ID,
		ActionTypeName: at.Name, ActorID: alice.ID, ActorName: alice.Username, TargetObjectID: obj.ID, Status: models.StatusQueued}
	if err := db.Create(&ex).Error; err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, eng: eng, pager: p, exID: ex.ID}
}

// One delivery step per channel, after the run: the in-app step commits
// its notification with its outcome; a remote channel that keeps failing
// asks for retries until its last attempt, which records the failure; the
// action stays succeeded, and a repeated step delivers nothing twice.
func TestDeliveryStepsPerChannel(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		p, err := f.eng.Validate(ctx, f.exID)
		if err != nil {
			t.Fatal(err)
		}
		want := []engine.Delivery{{Channel: "in_app"}, {Channel: "slack", Remote: true}}
		if b, _ := json.Marshal(p.Deliveries); string(b) != `[{"channel":"in_app"},{"channel":"slack","remote":true}]` {
			t.Fatalf("deliveries = %s, want %v", b, want)
		}
		if err := f.eng.Authorize(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := f.eng.Run(ctx, p, false); err != nil {
			t.Fatal(err)
		}
		if err := f.eng.Deliver(ctx, f.exID, "in_app", false); err != nil {
			t.Fatal(err)
		}
		var retry *delivery.RetryableDelivery
		if err := f.eng.Deliver(ctx, f.exID, "slack", true); !errors.As(err, &retry) {
			t.Fatalf("a failing remote delivery before its last attempt: %v, want RetryableDelivery", err)
		}
		if err := f.eng.Deliver(delivery.WithFinalAttempt(ctx), f.exID, "slack", true); err != nil {
			t.Fatalf("last attempt: %v", err)
		}
		f.pager.fail = false
		for _, ch := range []string{"in_app", "slack"} {
			if err := f.eng.Deliver(ctx, f.exID, ch, ch == "slack"); err != nil {
				t.Fatal(err)
			}
		}
		var ex models.Execution
		if err := db.Take(&ex, "id = ?", f.exID).Error; err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(ex.Notifications.V)
		if ex.Status != models.StatusSucceeded || ex.NotifiedAt == nil || len(ex.Notifications.V) != 2 ||
			ex.Notifications.V[0].Status != engine.Delivered || ex.Notifications.V[1].Status != engine.Failed {
			t.Fatalf("execution %s notified_at=%v outcomes %s", ex.Status, ex.NotifiedAt, got)
		}
		var notes []models.Notification
		db.Find(&notes)
		if len(notes) != 1 || notes[0].Title != "printer on fire escalated" || len(f.pager.delivered) != 0 {
			t.Errorf("in-app %+v, pager %v: each channel delivers once, the recorded failure is not sent again", notes, f.pager.delivered)
		}
	})
}
