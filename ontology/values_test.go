package ontology_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// everything creates Project and an object type with a property of every
// type, and returns the store and a Project object's id.
func everything(t *testing.T, db *gorm.DB) (*ontology.Store, string) {
	t.Helper()
	ctx := context.Background()
	s := ontology.NewStore(db, nil, builtinKinds)
	project := ok(s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Project",
		Properties: []ontology.PropertySpec{{Name: "title", Type: domain.T(domain.TypeString)}}}))(t)
	var sp ontology.ObjectTypeSpec
	decodeInto(t, fmt.Sprintf(`{"name":"Everything","properties":[
		{"name":"s","type":"string"},{"name":"i","type":"integer"},{"name":"d","type":"double"},
		{"name":"b","type":"boolean"},{"name":"dt","type":"date"},{"name":"ts","type":"timestamp"},
		{"name":"j","type":"json"},{"name":"a","type":{"type":"array","element_type":"integer"}},
		{"name":"v","type":{"type":"vector","dimension":3}},{"name":"vv","type":"vector"},
		{"name":"r","type":{"type":"reference","object_type_id":%q}},{"name":"ru","type":"reference"},
		{"name":"g","type":"geo_point"},{"name":"m","type":"media_reference"},{"name":"k","type":"marking"}
	]}`, project.ID), &sp)
	ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
	p := ok(s.CreateObject(ctx, nil, "Project", map[string]any{"title": "P"}, "", admin.ID, ""))(t)
	return s, p.ID
}

// TestPropertyTypesThroughObjects writes a value of every property type
// (accepted and refused) as an object property and reads it back.
func TestPropertyTypesThroughObjects(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, project := everything(t, db)
		cases := []struct {
			prop, value string // value is JSON
			reason      string // "" = accepted
		}{
			{"s", `"text"`, ""}, {"s", `""`, ""}, {"s", `1`, "type"}, {"s", `["a"]`, "type"},
			{"i", `42`, ""}, {"i", `-7`, ""}, {"i", `3.0`, ""}, {"i", `9223372036854775807`, ""},
			{"i", `1.5`, "not_integer"}, {"i", `1e30`, "not_integer"}, {"i", `"1"`, "type"}, {"i", `false`, "type"},
			{"d", `1.25`, ""}, {"d", `-3`, ""}, {"d", `1e-9`, ""}, {"d", `"1.2"`, "type"}, {"d", `{}`, "type"},
			{"b", `true`, ""}, {"b", `false`, ""}, {"b", `"true"`, "type"}, {"b", `1`, "type"},
			{"dt", `"2024-02-29"`, ""}, {"dt", `"2023-02-29"`, "format"}, {"dt", `"2024-1-5"`, "format"},
			{"dt", `"2024-01-05T00:00:00Z"`, "format"}, {"dt", `20240105`, "type"},
			{"ts", `"2024-01-05T10:00:00Z"`, ""}, {"ts", `"2024-01-05T10:00:00.123+02:00"`, ""},
			{"ts", `"2024-01-05 10:00:00"`, "format"}, {"ts", `"2024-01-05"`, "format"}, {"ts", `1704448800`, "type"},
			{"j", `{"any":[1,"x",null,{"deep":true}]}`, ""}, {"j", `"scalar"`, ""}, {"j", `[]`, ""},
			{"a", `[1,2,3]`, ""}, {"a", `[]`, ""}, {"a", `[1,"2"]`, "type"}, {"a", `[1,2.5]`, "not_integer"}, {"a", `1`, "type"},
			{"v", `[0.1,0.2,0.3]`, ""}, {"v", `[1,2]`, "dimension"}, {"v", `[1,"2",3]`, "type"}, {"vv", `[5]`, ""},
			{"vv", `[]`, "empty"}, {"vv", `"1,2"`, "type"},
			{"r", fmt.Sprintf("%q", project), ""}, {"r", `"aaaaaaaa-0000-4000-8000-000000000001"`, "not_found"},
			{"r", `"P"`, "format"}, {"r", `7`, "type"},
			{"ru", `"aaaaaaaa-0000-4000-8000-000000000001"`, ""}, {"ru", `"not-a-uuid"`, "format"},
			{"g", `{"lat":52.5,"lon":13.4}`, ""}, {"g", `{"lat":-90,"lon":180}`, ""}, {"g", `{"lat":91,"lon":0}`, "range"},
			{"g", `{"lat":0,"lon":-181}`, "range"}, {"g", `{"lat":"0","lon":0}`, "type"}, {"g", `{"lat":0,"lon":0,"alt":1}`, "unknown_member"},
			{"g", `[52.5,13.4]`, "type"},
			{"m", `"https://cdn.example.com/a.png"`, ""}, {"m", `"s3://bucket/key"`, ""}, {"m", `{"uri":"file:///x"}`, ""},
			{"m", `{"url":"https://x/y"}`, ""}, {"m", `""`, "format"}, {"m", `"has space"`, "format"},
			{"m", `{"uri":""}`, "format"}, {"m", `{"path":"/x"}`, "format"}, {"m", `5`, "type"},
			{"k", `"public"`, ""}, {"k", `"pii"`, ""}, {"k", `"secret"`, "unknown_marking"}, {"k", `"PII"`, "unknown_marking"}, {"k", `1`, "type"},
		}
		for _, c := range cases {
			t.Run(c.prop+"="+c.value, func(t *testing.T) {
				v := js(t, c.value)
				o, err := s.CreateObject(ctx, nil, "Everything", map[string]any{c.prop: v}, "", admin.ID, "")
				if c.reason != "" {
					mustCode(t, err, apperr.InvalidProperty, "properties."+c.prop)
					ae, _ := apperr.As(err)
					if ae.Details[0].Reason != c.reason {
						t.Fatalf("reason %q, want %q (%v)", ae.Details[0].Reason, c.reason, err)
					}
					// The same value is refused on update.
					_, err = s.UpdateObject(ctx, nil, project, map[string]any{"title": v})
					if c.prop == "s" {
						mustCode(t, err, apperr.InvalidProperty)
					}
					return
				}
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				back := ok(s.Object(ctx, nil, o.ID))(t)
				if !domain.ValuesEqual(back.Properties[c.prop], v) {
					t.Fatalf("read back %#v, wrote %s", back.Properties[c.prop], c.value)
				}
				// What was stored is still a valid value of the type.
				ok(s.UpdateObject(ctx, nil, o.ID, map[string]any{c.prop: back.Properties[c.prop]}))(t)
			})
		}
	})
}

// TestFilterOperators lists objects with every condition operator.
func TestFilterOperators(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := everything(t, db)
		for _, o := range []string{
			`{"s":"alpha","i":1,"dt":"2024-01-01","ts":"2024-01-01T00:00:00Z","a":[1,2],"k":"public","d":0.5}`,
			`{"s":"beta","i":5,"dt":"2024-06-01","ts":"2024-06-01T12:00:00+02:00","a":[2,3],"k":"confidential"}`,
			`{"s":"gamma","i":10,"dt":"2025-01-01","k":"pii","j":{"x":1}}`,
			`{}`,
		} {
			ok(s.CreateObject(ctx, nil, "Everything", jsMap(t, o), "", admin.ID, ""))(t)
		}
		cases := []struct {
			key, value string
			want       []string // values of s of the matching objects
		}{
			{"s.exists", "", []string{"alpha", "beta", "gamma"}},
			{"i.not_exists", "true", []string{""}},
			{"s", "beta", []string{"beta"}},
			{"i.is", "5.0", []string{"beta"}},
			{"ts.is", "2024-06-01T10:00:00Z", []string{"beta"}},
			{"j.is", `{"x":1.0}`, []string{"gamma"}},
			{"s.is_not", "beta", []string{"alpha", "gamma", ""}},
			{"a.includes", "2", []string{"alpha", "beta"}},
			{"s.includes", "mm", []string{"gamma"}},
			{"i.greater_than", "1", []string{"beta", "gamma"}},
			{"i.greater_than_or_equals", "5", []string{"beta", "gamma"}},
			{"i.less_than", "5", []string{"alpha"}},
			{"i.less_than_or_equals", "5", []string{"alpha", "beta"}},
			{"d.less_than", "1", []string{"alpha"}},
			{"dt.greater_than", "2024-03-01", []string{"beta", "gamma"}},
			{"ts.less_than", "2024-06-01T10:00:00.5Z", []string{"alpha", "beta"}},
			{"k.greater_than_or_equals", "confidential", []string{"beta", "gamma"}},
			{"s.less_than", "beta", []string{"alpha"}},
		}
		for _, c := range cases {
			t.Run(c.key+"="+c.value, func(t *testing.T) {
				objs := ok(s.ListObjects(ctx, admin, "Everything", ontology.ObjectQuery{
					Filters: []ontology.RawFilter{{Key: c.key, Value: c.value}}, Limit: 100}))(t)
				var got []string
				for _, o := range objs {
					v, _ := o.Properties.V["s"].(string)
					got = append(got, v)
				}
				if strings.Join(got, ",") != strings.Join(c.want, ",") {
					t.Fatalf("got %q, want %q", got, c.want)
				}
			})
		}
		for _, bad := range []ontology.RawFilter{
			{Key: "nope", Value: "1"}, {Key: "i.like", Value: "1"}, {Key: "i", Value: "one"},
			{Key: "i.exists", Value: "1"}, {Key: "b.greater_than", Value: "true"}, {Key: "i.includes", Value: "1"},
			{Key: "dt", Value: "2024-13-01"}, {Key: "k.is", Value: "secret"},
		} {
			_, err := s.ListObjects(ctx, admin, "Everything", ontology.ObjectQuery{Filters: []ontology.RawFilter{bad}, Limit: 10})
			mustCode(t, err, apperr.InvalidArgument, "filter."+bad.Key)
		}
	})
}

// TestPropertyChangesMigrateObjects changes properties of a type that has
// objects: values must fit, required properties need defaults (filled in),
// unique properties are indexed and enforced.
func TestPropertyChangesMigrateObjects(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		s := f.s
		ann := f.employeeObj(t, admin, `{"name":"Ann","age":30,"owner_id":"x"}`)
		bob := f.employeeObj(t, admin, `{"name":"Bob","age":30,"owner_id":"x","email":"bob@x"}`)

		_, err := s.CreateProperty(ctx, "Employee", ontology.PropertySpec{Name: "dept", Type: domain.T(domain.TypeString), Required: true})
		mustCode(t, err, apperr.Conflict, "default_value")
		ok(s.CreateProperty(ctx, "Employee", ontology.PropertySpec{Name: "dept", Type: domain.T(domain.TypeString), Required: true, DefaultValue: "ops"}))(t)
		if got := ok(s.Object(ctx, nil, ann.ID))(t).Properties["dept"]; got != "ops" {
			t.Fatalf("new required property not filled in: %v", got)
		}

		// integer → double fits; double → boolean does not.
		ok(s.PatchProperty(ctx, "Employee", "age", ontology.Patch{"type": []byte(`"double"`)}))(t)
		_, err = s.PatchProperty(ctx, "Employee", "age", ontology.Patch{"type": []byte(`"boolean"`)})
		mustCode(t, err, apperr.Conflict, "does not fit")

		// Both own the same age: it cannot become unique.
		_, err = s.PatchProperty(ctx, "Employee", "age", ontology.Patch{"unique": []byte(`true`)})
		mustCode(t, err, apperr.UniqueViolation, "age")
		ok(s.UpdateObject(ctx, nil, ann.ID, map[string]any{"age": 31}))(t)
		ok(s.PatchProperty(ctx, "Employee", "age", ontology.Patch{"unique": []byte(`true`)}))(t)
		_, err = s.UpdateObject(ctx, nil, ann.ID, map[string]any{"age": 30.0})
		mustCode(t, err, apperr.UniqueViolation, "age")
		if strings.Contains(err.Error(), bob.ID) {
			t.Fatalf("the unique conflict names the object holding the value (which the caller may not read): %v", err)
		}
		ok(s.PatchProperty(ctx, "Employee", "age", ontology.Patch{"unique": []byte(`false`)}))(t)
		ok(s.UpdateObject(ctx, nil, ann.ID, map[string]any{"age": 30}))(t)
		_, err = s.CreateProperty(ctx, "Employee", ontology.PropertySpec{Name: "code", Type: domain.T(domain.TypeString), Unique: true, DefaultValue: "x"})
		mustCode(t, err, apperr.InvalidOntology, "default_value")

		// Deleting a property removes its values.
		if err := s.DeleteProperty(ctx, "Employee", "owner_id"); err != nil {
			t.Fatal(err)
		}
		if _, has := ok(s.Object(ctx, nil, ann.ID))(t).Properties["owner_id"]; has {
			t.Fatal("deleted property's value is still on the object")
		}

		// Unique timestamps compare as instants.
		ok(s.CreateProperty(ctx, "Team", ontology.PropertySpec{Name: "since", Type: domain.T(domain.TypeTimestamp), Unique: true}))(t)
		ok(s.CreateObject(ctx, nil, "Team", jsMap(t, `{"title":"A","since":"2024-01-01T01:00:00+01:00"}`), "", admin.ID, ""))(t)
		_, err = s.CreateObject(ctx, nil, "Team", jsMap(t, `{"title":"B","since":"2024-01-01T00:00:00Z"}`), "", admin.ID, "")
		mustCode(t, err, apperr.UniqueViolation, "since")
		var n int64
		db.Model(&models.Object{}).Where("object_type_id = ?", f.team.ID).Count(&n)
		if n != 1 {
			t.Fatalf("refused object was stored: %d teams", n)
		}

		// A reference property of another type pins its object type.
		ok(s.CreateProperty(ctx, "Team", ontology.PropertySpec{Name: "lead", Type: domain.ReferenceTo(f.employee.ID)}))(t)
		err = s.DeleteLinkType(ctx, "member_of")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range ok(s.ListObjects(ctx, admin, "Employee", ontology.ObjectQuery{Limit: 10}))(t) {
			if _, _, err := s.DeleteObject(ctx, nil, o.ID); err != nil {
				t.Fatal(err)
			}
		}
		err = s.DeleteObjectType(ctx, "Employee")
		mustCode(t, err, apperr.DependentsExist, "property lead of object type Team")
		ok(0, s.DeleteProperty(ctx, "Team", "lead"))(t)
		ok(0, s.DeleteObjectType(ctx, "Employee"))(t)
		var props int64
		db.Model(&models.Property{}).Where("object_type_id = ?", f.employee.ID).Count(&props)
		if props != 0 {
			t.Fatalf("deleting an object type left %d properties", props)
		}
	})
}

// TestConcurrentWritersKeepConstraints races writers for one unique value
// and for the single link a many_to_one source may have: exactly one wins
// each race, the others get the typed 409.
func TestConcurrentWritersKeepConstraints(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		const n = 8
		run := func(fn func(i int) error) (wins int, codes map[apperr.Code]int) {
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				go func(i int) { errs <- fn(i) }(i)
			}
			codes = map[apperr.Code]int{}
			for i := 0; i < n; i++ {
				if err := <-errs; err == nil {
					wins++
				} else {
					codes[apperr.CodeOf(err)]++
				}
			}
			return wins, codes
		}
		wins, codes := run(func(i int) error {
			_, err := f.s.CreateObject(ctx, nil, "Employee", map[string]any{"name": fmt.Sprintf("E%d", i), "email": "same@x"}, "", admin.ID, "")
			return err
		})
		if wins != 1 || codes[apperr.UniqueViolation] != n-1 {
			t.Fatalf("unique race: %d wins, errors %v", wins, codes)
		}
		src := ok(f.s.CreateObject(ctx, nil, "Employee", map[string]any{"name": "Src"}, "", admin.ID, ""))(t)
		teams := make([]string, n)
		for i := range teams {
			teams[i] = ok(f.s.CreateObject(ctx, nil, "Team", map[string]any{"title": fmt.Sprintf("T%d", i)}, "", admin.ID, ""))(t).ID
		}
		wins, codes = run(func(i int) error {
			_, err := f.s.CreateLink(ctx, nil, f.memberOf.ID, src.ID, teams[i])
			return err
		})
		if wins != 1 || codes[apperr.CardinalityViolation] != n-1 {
			t.Fatalf("cardinality race: %d wins, errors %v", wins, codes)
		}
	})
}

// A reference written with an upper-case UUID is the same value as its
// lower-case spelling: it is stored lower-case, the unique check refuses
// the second spelling, and a filter in either case finds it.
func TestReferenceUUIDCaseIsNormalized(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		ok(s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Project",
			Properties: []ontology.PropertySpec{{Name: "title", Type: domain.T(domain.TypeString)}}}))(t)
		p := ok(s.CreateObject(ctx, nil, "Project", map[string]any{"title": "P"}, "", admin.ID, ""))(t)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, `{"name":"Seat","properties":[{"name":"label","type":"string"},
			{"name":"project","type":{"type":"reference"},"unique":true}]}`, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)

		upper := strings.ToUpper(p.ID)
		if upper == p.ID {
			t.Fatalf("id %s has no letters to upper-case", p.ID)
		}
		first := ok(s.CreateObject(ctx, nil, "Seat", map[string]any{"label": "a", "project": upper}, "", admin.ID, ""))(t)
		if got := first.Properties["project"]; got != p.ID {
			t.Fatalf("stored reference = %v, want the lower-case id %s", got, p.ID)
		}
		_, err := s.CreateObject(ctx, nil, "Seat", map[string]any{"label": "b", "project": p.ID}, "", admin.ID, "")
		mustCode(t, err, apperr.UniqueViolation)
		_, err = s.CreateObject(ctx, nil, "Seat", map[string]any{"label": "c", "project": upper}, "", admin.ID, "")
		mustCode(t, err, apperr.UniqueViolation)

		for _, v := range []string{p.ID, upper} {
			got := ok(s.ListObjects(ctx, admin, "Seat", ontology.ObjectQuery{
				Filters: []ontology.RawFilter{{Key: "project", Value: v}}, Limit: 10}))(t)
			if len(got) != 1 || got[0].ID != first.ID {
				t.Errorf("filter project=%s found %d objects, want the one seat", v, len(got))
			}
		}
	})
}
