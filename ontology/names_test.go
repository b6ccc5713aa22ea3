package ontology_test

import (
	"context"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/ontology"
)

// TestDuplicateNameMessage: the 409 for a taken name reads as English
// ("an object type", "a link type"), the way issue 46 found it did not.
func TestDuplicateNameMessage(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newDefFixture(t, db)
		_, err := f.s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Project",
			Properties: []ontology.PropertySpec{{Name: "title", Type: domain.T(domain.TypeString)}}})
		if want := `an object type named "Project" already exists`; err == nil || !strings.HasSuffix(err.Error(), ": "+want) {
			t.Fatalf("duplicate object type: got %v, want %q", err, want)
		}
		_, err = f.s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "in_project",
			SourceObjectTypeID: f.ticket, TargetObjectTypeID: f.project, Cardinality: domain.ManyToOne})
		if want := `a link type named "in_project" already exists`; err == nil || !strings.HasSuffix(err.Error(), ": "+want) {
			t.Fatalf("duplicate link type: got %v, want %q", err, want)
		}
	})
}
