package ontology_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// The engine reads and writes the ontology through this interface.
var _ engine.Ontology = (*ontology.Store)(nil)

// builtinKinds are the operation kinds the application registers.
var builtinKinds = kinds.Registry().Domain()

var (
	admin = &models.User{ID: "00000000-0000-4000-8000-0000000000ad", Username: "admin",
		Roles: models.NewJSON([]string{"admin"}), Clearance: "pii"}
	alice = &models.User{ID: "00000000-0000-4000-8000-00000000a11c", Username: "alice",
		Clearance: "confidential", Organization: "acme"}
	bob = &models.User{ID: "00000000-0000-4000-8000-000000000b0b", Username: "bob",
		Clearance: "pii", Organization: "globex"}
)

// js decodes JSON as the API does (numbers as json.Number).
func js(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func jsMap(t testing.TB, s string) map[string]any {
	t.Helper()
	m, ok := js(t, s).(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object", s)
	}
	return m
}

// decodeInto decodes s strictly into out, as the API decodes bodies.
func decodeInto(t testing.TB, s string, out any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
}

func mustCode(t testing.TB, err error, code apperr.Code, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected %s, got success", code)
	}
	if got := apperr.CodeOf(err); got != code {
		t.Fatalf("expected %s, got %s: %v", code, got, err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Fatalf("error %q does not mention %q", err.Error(), c)
		}
	}
}

// ok unwraps a (value, error) pair, failing the test on an error:
// ok(f())(t).
func ok[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// fixture is a small ontology: Employee (name primary key, age, tags,
// manager reference) and Team, linked by member_of (many_to_one).
type fixture struct {
	s        *ontology.Store
	db       *gorm.DB
	employee *ontology.ObjectTypeView
	team     *ontology.ObjectTypeView
	memberOf *models.LinkType
}

func newFixture(t *testing.T, db *gorm.DB) *fixture {
	t.Helper()
	ctx := context.Background()
	s := ontology.NewStore(db, auth.DefaultLevels, builtinKinds)
	f := &fixture{s: s, db: db}
	var sp ontology.ObjectTypeSpec
	decodeInto(t, `{"name":"Employee","display_name":"Employee","primary_key":"name","properties":[
		{"name":"name","type":"string"},
		{"name":"age","type":"integer"},
		{"name":"salary","type":"double"},
		{"name":"active","type":"boolean","default_value":true},
		{"name":"born","type":"date"},
		{"name":"tags","type":{"type":"array","element_type":"string"}},
		{"name":"email","type":"string","unique":true},
		{"name":"owner_id","type":"string"},
		{"name":"level","type":"marking"}
	]}`, &sp)
	f.employee = ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
	f.team = ok(s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Team", PrimaryKey: "title",
		Properties: []ontology.PropertySpec{{Name: "title", Type: domain.T(domain.TypeString)}}}))(t)
	f.memberOf = ok(s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "member_of",
		SourceObjectTypeID: "Employee", TargetObjectTypeID: "Team", Cardinality: domain.ManyToOne}))(t)
	return f
}

func (f *fixture) employeeObj(t *testing.T, u *models.User, props string) *models.Object {
	t.Helper()
	return ok(f.s.CreateObjectAs(context.Background(), u, "Employee", ontology.ObjectSpec{Properties: jsMap(t, props)}))(t)
}

func TestEngineInterface(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		s := f.s
		var o *domain.Object
		err := db.Transaction(func(tx *gorm.DB) error {
			var err error
			o, err = s.CreateObject(ctx, tx, f.employee.ID, jsMap(t, `{"name":"Ann","age":30}`), "", admin.ID, "acme")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if o.Marking != "public" || o.Organization != "acme" || o.Properties["active"] != true {
			t.Fatalf("created object %+v: want public marking, acme, default active=true", o)
		}
		if ok := ok(s.ObjectExists(ctx, f.employee.ID, o.ID))(t); !ok {
			t.Fatal("ObjectExists: false for a created object")
		}
		if ok := ok(s.ObjectExists(ctx, f.team.ID, o.ID))(t); ok {
			t.Fatal("ObjectExists: true for the wrong type")
		}
		if ok := ok(s.ObjectExists(ctx, "", o.ID))(t); !ok {
			t.Fatal("ObjectExists: false with any type")
		}

		// A failed update inside the engine's transaction rolls back with it.
		err = db.Transaction(func(tx *gorm.DB) error {
			if _, err := s.UpdateObject(ctx, tx, o.ID, jsMap(t, `{"age":31}`)); err != nil {
				return err
			}
			_, err := s.UpdateObject(ctx, tx, o.ID, jsMap(t, `{"age":"old"}`))
			return err
		})
		mustCode(t, err, apperr.InvalidProperty, "properties.age")
		got := ok(s.Object(ctx, nil, o.ID))(t)
		if got.Properties["age"] != json.Number("30") {
			t.Fatalf("age after rolled back update = %v, want 30", got.Properties["age"])
		}

		up := ok(s.UpdateObject(ctx, nil, o.ID, jsMap(t, `{"age":31,"born":null}`)))(t)
		if n, _ := domain.AsInt64(up.Properties["age"]); n != 31 {
			t.Fatalf("updated age = %v", up.Properties["age"])
		}
		_, err = s.UpdateObject(ctx, nil, o.ID, jsMap(t, `{"name":null}`))
		mustCode(t, err, apperr.InvalidProperty, "properties.name", "required")
		_, err = s.UpdateObject(ctx, nil, o.ID, jsMap(t, `{"nope":1}`))
		mustCode(t, err, apperr.InvalidProperty, "properties.nope")
		_, err = s.UpdateObject(ctx, nil, "aaaaaaaa-0000-4000-8000-000000000001", jsMap(t, `{"age":1}`))
		mustCode(t, err, apperr.ObjectNotFound)

		team := ok(s.CreateObject(ctx, nil, "Team", jsMap(t, `{"title":"Core"}`), "confidential", admin.ID, "acme"))(t)
		team2 := ok(s.CreateObject(ctx, nil, "Team", jsMap(t, `{"title":"Edge"}`), "", admin.ID, "acme"))(t)
		lid := ok(s.CreateLink(ctx, nil, f.memberOf.ID, o.ID, team.ID))(t)
		if lid == "" {
			t.Fatal("CreateLink returned no id")
		}
		_, err = s.CreateLink(ctx, nil, f.memberOf.ID, o.ID, team2.ID)
		mustCode(t, err, apperr.CardinalityViolation)
		_, err = s.CreateLink(ctx, nil, f.memberOf.ID, team.ID, o.ID)
		mustCode(t, err, apperr.InvalidArgument, "object type")

		gone, removed, err := s.DeleteObject(ctx, nil, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if gone.ID != o.ID || len(removed) != 1 || removed[0].ID != lid {
			t.Fatalf("DeleteObject returned %+v and links %+v, want the object and link %s", gone, removed, lid)
		}
		if got := ok(s.Object(ctx, nil, o.ID))(t); got != nil {
			t.Fatalf("object still there after delete: %+v", got)
		}
		var links int64
		db.Model(&models.Link{}).Where("id = ?", lid).Count(&links)
		if links != 0 {
			t.Fatal("deleting an object left its link")
		}
		_, _, err = s.DeleteObject(ctx, nil, o.ID)
		mustCode(t, err, apperr.ObjectNotFound)

		_, err = s.ActionType(ctx, "aaaaaaaa-0000-4000-8000-000000000001")
		mustCode(t, err, apperr.ActionTypeNotFound)
	})
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
