package invokefunction_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds/invokefunction"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// fnOp builds the Op of an inline function action on target.
func fnOp(t *testing.T, k invokefunction.InvokeFunction, store *ontology.Store, target *domain.Object, op string) *engine.Op {
	cfg := k.NewConfig()
	if err := json.Unmarshal([]byte(op), cfg); err != nil {
		t.Fatal(err)
	}
	return &engine.Op{Action: &engine.ActionType{ID: "a1", ActionDefinition: domain.ActionDefinition{Name: "fn"}}, Config: cfg, Actor: admin, Target: target,
		Params: map[string]any{}, ExecutionID: "e1", Ontology: store}
}

// applyIn runs Apply in a transaction, the target re-read in it as the
// run step does.
func applyIn(t *testing.T, db *gorm.DB, k invokefunction.InvokeFunction, op *engine.Op, effect json.RawMessage) (*engine.Outcome, error) {
	var out *engine.Outcome
	err := db.Transaction(func(tx *gorm.DB) error {
		var err error
		sub := *op
		sub.Tx, sub.Effect = models.InTx(tx), effect
		if sub.Target, err = op.Ontology.In(sub.Tx).Object(context.Background(), op.Target.ID); err != nil {
			return err
		}
		out, err = k.Apply(context.Background(), &sub)
		return err
	})
	return out, err
}

// TestFunctionStaleRead: when the target changes between the function's
// run and the commit, a function without network runs again inside the
// transaction (its edit computed from the new data); one with network is
// refused 409 and applies nothing.
func TestFunctionStaleRead(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.New(t, db)
		svc := functions.New(db, functions.Options{})
		k := invokefunction.InvokeFunction{Functions: svc, Reads: functions.NewReads(e.Store)}
		enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "notes", Type: domain.T(domain.TypeString)}}}))(t)
		obj := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"notes": "a"}}))(t)
		src := `export default (ctx) => ({ edits: [{ type: "update", object_id: ctx.target.id, properties: { notes: ctx.target.properties.notes + "!" } }] })`

		for _, network := range []bool{false, true} {
			t.Run(fmt.Sprint("network=", network), func(t *testing.T) {
				cur := enginetest.Must(e.Store.Object(ctx, nil, obj.ID))(t)
				op := fnOp(t, k, e.Store, cur, fmt.Sprintf(`{"inline":{"runtime":"javascript","source":%q},"capabilities":{"network":%v}}`, src, network))
				effect := enginetest.Must(k.Effect(ctx, op, "e1"))(t)
				// Another write lands between the run and the commit.
				enginetest.Must(e.Store.UpdateObject(ctx, nil, obj.ID, map[string]any{"notes": "changed"}))(t)
				out, err := applyIn(t, db, k, op, effect)
				after := enginetest.Must(e.Store.Object(ctx, nil, obj.ID))(t)
				if network {
					if !apperr.Is(err, apperr.Conflict) || after.Properties["notes"] != "changed" {
						t.Fatalf("want 409 and nothing applied, got %v, notes %v", err, after.Properties["notes"])
					}
					return
				}
				if err != nil || after.Properties["notes"] != "changed!" || len(out.Edits) != 1 {
					t.Fatalf("want a re-run on fresh data, got %v, notes %v", err, after.Properties["notes"])
				}
			})
		}
	})
}

// TestFunctionEditsInvert: every edit a function applies inverts to what
// the revert step applies.
func TestFunctionEditsInvert(t *testing.T) {
	k := invokefunction.InvokeFunction{}
	for _, ed := range []models.Edit{
		{Op: models.EditUpdateObject, ObjectID: "o", Before: map[string]any{"a": 1}, After: map[string]any{"a": 2}},
		{Op: models.EditCreateObject, ObjectID: "o"},
		{Op: models.EditDeleteObject, ObjectID: "o", Marking: "public"},
		{Op: models.EditCreateLink, LinkID: "l"},
	} {
		if _, err := k.Invert(ed); err != nil {
			t.Fatalf("%s: %v", ed.Op, err)
		}
	}
	if _, err := k.Invert(models.Edit{Op: models.EditDeleteLink, LinkID: "l"}); err == nil {
		t.Fatal("an unlink without its creation time must not invert")
	}
}

// TestFunctionEditsRevert: the edits a function applied — update,
// create, link, then unlink and delete — are undone by the revert step
// through invoke_function's Invert.
func TestFunctionEditsRevert(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.NewFunctions(t, db)
		ot := enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}, {Name: "notes", Type: domain.T(domain.TypeString)}}}))(t)
		enginetest.Must(e.Store.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "relates", SourceObjectTypeID: ot.ID,
			TargetObjectTypeID: ot.ID, Cardinality: domain.ManyToMany}))(t)
		src := `export default function (ctx) {
  if (ctx.parameters.step === "grow") return { edits: [
    { type: "update", object_id: ctx.target.id, properties: { notes: "grown" } },
    { type: "create", object_type: "Ticket", properties: { title: "child" } } ] };
  const child = ctx.ontology.query("Ticket", { title: "child" }, 1)[0];
  if (ctx.parameters.step === "link") return { edits: [{ type: "link", link_type: "relates", source: ctx.target.id, target: child.id }] };
  return { edits: [{ type: "unlink", link_type: "relates", source: ctx.target.id, target: child.id }, { type: "delete", object_id: child.id }] };
}`
		var d domain.ActionDefinition
		enginetest.Decode(t, fmt.Sprintf(`{"name":"fn","object_type_id":%q,"operation_kind":"invoke_function","inputs":[{"name":"step","type":"string","required":true}],
			"config":{"operation":{"inline":{"runtime":"javascript","source":%q}}}}`, ot.ID, src), &d)
		at := enginetest.Must(e.Store.ActionType(ctx, enginetest.Must(e.Store.CreateActionType(ctx, admin.ID, d))(t).ID))(t)
		target := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"title": "t", "notes": "orig"}}))(t)
		run := func(step string) string {
			id := e.Execution(t, at, models.KindExecute, target.ID, map[string]any{"step": step}, nil, 0)
			if err := e.RunWithEffect(ctx, id); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			return id
		}
		count := func(q *gorm.DB, m any) int64 {
			var n int64
			if err := q.Model(m).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		grow, link := run("grow"), run("link")
		shrink := run("shrink")
		if n := count(db.Where("link_type_id IS NOT NULL"), &models.Link{}); n != 0 {
			t.Fatalf("links after shrink: %d", n)
		}
		// Undo in reverse: the unlink and delete come back (same ids), then
		// the link goes, then the update and the create are undone.
		for _, id := range []string{shrink, link, grow} {
			if err := e.Revert(ctx, t, at, id); err != nil {
				t.Fatalf("revert %s: %v", id, err)
			}
			if id == shrink && count(db.Where("1 = 1"), &models.Link{}) != 1 {
				t.Fatal("the revert of the unlink did not restore the link")
			}
		}
		got := enginetest.Must(e.Store.Object(ctx, nil, target.ID))(t)
		if got.Properties["notes"] != "orig" || count(db.Where("object_type_id = ?", ot.ID), &models.Object{}) != 1 || count(db.Where("1 = 1"), &models.Link{}) != 0 {
			t.Fatalf("after the reverts: notes %v, objects %d, links %d", got.Properties["notes"],
				count(db.Where("object_type_id = ?", ot.ID), &models.Object{}), count(db.Where("1 = 1"), &models.Link{}))
		}
	})
}

// TestFunctionPreviewEffect: what-if's run refuses network, is marked a
// preview, and is recorded as a what-if run of the resolved version.
func TestFunctionPreviewEffect(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t, "sqlite")
	e := enginetest.New(t, db)
	svc := functions.New(db, functions.Options{})
	k := invokefunction.InvokeFunction{Functions: svc, Reads: functions.NewReads(e.Store)}
	enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
		{Name: "notes", Type: domain.T(domain.TypeString)}}}))(t)
	obj := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"notes": "a"}}))(t)
	enginetest.Must(svc.CreatePackage(ctx, admin, functions.PackageSpec{Name: "p", Runtime: "javascript",
		Capabilities: &functions.Capabilities{Network: true}}))(t)
	enginetest.Must(svc.Publish(ctx, admin, "p", functions.VersionSpec{Version: "1.0.0",
		Source: `export default (ctx) => ({ edits: [], result: typeof ctx.fetch })`}))(t)
	op := fnOp(t, k, e.Store, enginetest.Must(e.Store.Object(ctx, nil, obj.ID))(t), `{"package":"p","version":"1.0.0"}`)
	if o := k.EffectOptions(op); o.Local {
		t.Fatal("a function with network must run as a regular activity")
	}
	raw := enginetest.Must(k.PreviewEffect(ctx, op))(t)
	var call invokefunction.FunctionCall
	if err := json.Unmarshal(raw, &call); err != nil {
		t.Fatal(err)
	}
	if !call.Preview || string(call.Result) != `"undefined"` || call.Version != "1.0.0" {
		t.Fatalf("preview: %s", raw)
	}
	runs := enginetest.Must(svc.Runs(ctx, admin, functions.NewReads(e.Store), "p", functions.RunFilter{Limit: 10}))(t)
	if len(runs) != 1 || runs[0].Kind != functions.RunWhatIf {
		t.Fatalf("runs: %+v", runs)
	}
}

// TestFunctionEditReferenceReadRule: a reference value in a function's
// update or create naming an object the actor may not read is refused
// exactly as one naming no object (no existence oracle), as REST
// (Store.As) and the built-in kinds (checkEnv) answer.
func TestFunctionEditReferenceReadRule(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.New(t, db)
		k := invokefunction.InvokeFunction{Functions: functions.New(db, functions.Options{}), Reads: functions.NewReads(e.Store)}
		ot := enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}}}))(t)
		enginetest.Must(e.Store.CreateProperty(ctx, ot.ID, ontology.PropertySpec{Name: "owner",
			Type: domain.PropertyType{Base: domain.TypeReference, ObjectTypeID: ot.ID}}))(t)
		target := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"title": "open"}}))(t)
		hidden := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"title": "secret"}, Marking: "pii"}))(t)
		low := &models.User{ID: "00000000-0000-4000-8000-000000000100", Username: "low", Clearance: "public", Organization: "acme"}
		missing := "aaaaaaaa-0000-4000-8000-000000000001"
		src := `export default (ctx) => ctx.parameters.kind === "update"
  ? { edits: [{ type: "update", object_id: ctx.target.id, properties: { owner: ctx.parameters.ref } }] }
  : { edits: [{ type: "create", object_type: "Ticket", properties: { title: "new", owner: ctx.parameters.ref } }] }`
		refusal := func(kind, ref string) string {
			cur := enginetest.Must(e.Store.Object(ctx, nil, target.ID))(t)
			op := fnOp(t, k, e.Store, cur, fmt.Sprintf(`{"inline":{"runtime":"javascript","source":%q}}`, src))
			op.Actor, op.Params = low, map[string]any{"kind": kind, "ref": ref}
			effect := enginetest.Must(k.Effect(ctx, op, "e1"))(t)
			_, err := applyIn(t, db, k, op, effect)
			ae, ok := apperr.As(err)
			if !ok {
				t.Fatalf("%s owner=%s: applied (%v), want a refusal", kind, ref, err)
			}
			b, _ := json.Marshal(ae)
			return strings.ReplaceAll(string(b), ref, "<id>")
		}
		for _, kind := range []string{"update", "create"} {
			gone, unreadable := refusal(kind, missing), refusal(kind, hidden.ID)
			if gone != unreadable || !strings.Contains(gone, "FunctionEditRefused") || !strings.Contains(gone, "not_found") {
				t.Errorf("%s: an unreadable reference answered\n %s\nwant as a missing one\n %s", kind, unreadable, gone)
			}
		}
		if got := enginetest.Must(e.Store.Object(ctx, nil, target.ID))(t).Properties["owner"]; got != nil {
			t.Errorf("owner set to %v", got)
		}
	})
}

// TestFunctionExecutionRedactedByReads: an execution's function console
// and result may quote every object the function read, so the action log
// shows them only to a reader of all of them (operation_result.function
// .reads): a caller who may read the target but not an object the
// function read sees the execution redacted.
func TestFunctionExecutionRedactedByReads(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.New(t, db)
		k := invokefunction.InvokeFunction{Functions: functions.New(db, functions.Options{}), Reads: functions.NewReads(e.Store)}
		enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}}}))(t)
		open := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"title": "open"}}))(t)
		hidden := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"title": "classified"}, Marking: "pii"}))(t)
		src := `export default (ctx) => { const o = ctx.ontology.get(ctx.parameters.other); console.log(o.properties.title); return { result: o.properties.title } }`
		op := fnOp(t, k, e.Store, enginetest.Must(e.Store.Object(ctx, nil, open.ID))(t), fmt.Sprintf(`{"inline":{"runtime":"javascript","source":%q}}`, src))
		op.Params = map[string]any{"other": hidden.ID}
		out := enginetest.Must(applyIn(t, db, k, op, enginetest.Must(k.Effect(ctx, op, "e1"))(t)))(t)
		stored, _ := json.Marshal(out.Result)
		var roundTrip map[string]any
		if err := json.Unmarshal(stored, &roundTrip); err != nil {
			t.Fatal(err)
		}
		bob := &auth.Principal{User: &models.User{ID: "00000000-0000-4000-8000-000000000b0b", Username: "bob", Clearance: "public", Organization: "acme"}}
		for name, res := range map[string]map[string]any{"as recorded": out.Result, "as stored": roundTrip} {
			ex := models.Execution{ID: "e1", ActorID: admin.ID, TargetObjectID: open.ID, Result: models.NewJSON(res)}
			e.Store.RedactExecution(ctx, bob, &ex)
			if !ex.Redacted || len(ex.Result.V) != 0 {
				t.Errorf("%s: bob sees the console of a function that read what he may not: %+v", name, ex.Result.V)
			}
			ex = models.Execution{ID: "e1", ActorID: admin.ID, TargetObjectID: open.ID, Result: models.NewJSON(res)}
			e.Store.RedactExecution(ctx, &auth.Principal{User: admin}, &ex)
			if ex.Redacted {
				t.Errorf("%s: the actor's execution redacted", name)
			}
		}
	})
}

// TestFunctionPreviewReadsTheBranch: in a what-if the preview runs inside
// the transaction that replayed the branch (op.Tx): query and links read
// the branch through it, not main; and its wall time is capped (it holds
// the write transaction), whatever the function's own timeout.
func TestFunctionPreviewReadsTheBranch(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e := enginetest.New(t, db)
		k := invokefunction.InvokeFunction{Functions: functions.New(db, functions.Options{}), Reads: functions.NewReads(e.Store)}
		ot := enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}}}))(t)
		lt := enginetest.Must(e.Store.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "relates", SourceObjectTypeID: ot.ID,
			TargetObjectTypeID: ot.ID, Cardinality: domain.ManyToMany}))(t)
		target := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"title": "main"}}))(t)
		src := `export default (ctx) => ({ result: { tickets: ctx.ontology.query("Ticket", {}).length, links: ctx.ontology.links(ctx.target.id, "relates").length } })`
		var call invokefunction.FunctionCall
		err := db.Transaction(func(tx *gorm.DB) error {
			// What the branch's earlier steps left: one more ticket, linked.
			branch := enginetest.Must(e.Store.CreateObject(ctx, tx, ot.ID, map[string]any{"title": "branch"}, "", admin.ID, admin.Organization))(t)
			enginetest.Must(e.Store.CreateLink(ctx, tx, lt.ID, target.ID, branch.ID))(t)
			op := fnOp(t, k, e.Store, enginetest.Must(e.Store.Object(ctx, tx, target.ID))(t),
				fmt.Sprintf(`{"inline":{"runtime":"javascript","source":%q},"capabilities":{"timeout":"30s"}}`, src))
			op.Tx = models.InTx(tx)
			raw, err := k.PreviewEffect(ctx, op)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &call); err != nil {
				return err
			}
			return errors.New("roll back")
		})
		if err == nil || err.Error() != "roll back" {
			t.Fatal(err)
		}
		if string(call.Result) != `{"tickets":2,"links":1}` {
			t.Errorf("the preview read %s, want the branch's 2 tickets and 1 link", call.Result)
		}
		if call.TimeoutMS > 5000 {
			t.Errorf("a preview may run %d ms inside the write transaction, want at most 5000", call.TimeoutMS)
		}
	})
}

// TestFunctionReadsLockedUntilCommit: on Postgres, the objects a function
// read (beyond the target, which the run step locks) are locked by the
// stale-read check until the commit, so a write cannot land between the
// check and the commit. SQLite runs one write transaction at a time.
func TestFunctionReadsLockedUntilCommit(t *testing.T) {
	if !slices.Contains(testdb.Dialects(), "postgres") {
		t.Skip("row locks are Postgres's; set TEST_DATABASE_URL")
	}
	db := testdb.Open(t, "postgres")
	ctx := context.Background()
	e := enginetest.New(t, db)
	svc := functions.New(db, functions.Options{})
	k := invokefunction.InvokeFunction{Functions: svc, Reads: functions.NewReads(e.Store)}
	enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
		{Name: "notes", Type: domain.T(domain.TypeString)}}}))(t)
	target := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"notes": "a"}}))(t)
	other := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"notes": "read me"}}))(t)
	src := fmt.Sprintf(`export default (ctx) => ({ edits: [{ type: "update", object_id: ctx.target.id,
		properties: { notes: ctx.ontology.get(%q).properties.notes } }] })`, other.ID)
	cur := enginetest.Must(e.Store.Object(ctx, nil, target.ID))(t)
	op := fnOp(t, k, e.Store, cur, fmt.Sprintf(`{"inline":{"runtime":"javascript","source":%q}}`, src))
	effect := enginetest.Must(k.Effect(ctx, op, "e1"))(t)

	err := db.Transaction(func(tx *gorm.DB) error {
		sub := *op
		sub.Tx, sub.Effect = models.InTx(tx), effect
		if _, err := k.Apply(ctx, &sub); err != nil {
			return err
		}
		// Before the commit, another connection tries to change what
		// the function read: it must wait for the commit.
		return db.Transaction(func(w *gorm.DB) error {
			if err := w.Exec("SET LOCAL lock_timeout = '200ms'").Error; err != nil {
				return err
			}
			err := w.Exec("UPDATE objects SET updated_at = now() WHERE id = ?", other.ID).Error
			if err == nil || !strings.Contains(err.Error(), "lock timeout") {
				t.Errorf("a write to the object the function read went through before the commit: %v", err)
			}
			return errors.New("roll back the writer")
		})
	})
	if err == nil || err.Error() != "roll back the writer" {
		t.Fatalf("apply: %v", err)
	}
}
