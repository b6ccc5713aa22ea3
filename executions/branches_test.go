package executions

import (
	"context"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/whatif"
)

// TestSweepBranches: expired branches and their steps are purged by the
// sweep alone, without anybody opening or listing branches; live ones stay.
func TestSweepBranches(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Now().UTC()
		for id, exp := range map[string]time.Time{"expired": now.Add(-time.Minute), "live": now.Add(time.Hour)} {
			b := models.Branch{ID: id, OwnerID: "u1", Status: models.BranchOpen, Steps: 1, ExpiresAt: exp}
			if err := db.Create(&b).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Create(&models.BranchStep{ID: id + "-step", BranchID: id, Position: 1}).Error; err != nil {
				t.Fatal(err)
			}
		}
		s := New(db, nil, nil, nil, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.SweepBranches(ctx, 10*time.Millisecond); close(done) }()
		defer func() { cancel(); <-done }()
		deadline := time.Now().Add(5 * time.Second)
		for {
			var ids, steps []string
			db.Model(&models.Branch{}).Order("id").Pluck("id", &ids)
			db.Model(&models.BranchStep{}).Order("id").Pluck("id", &steps)
			if reflect.DeepEqual(ids, []string{"live"}) && reflect.DeepEqual(steps, []string{"live-step"}) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the sweep: branches %v, steps %v", ids, steps)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestApplyMapsCreatedIDs: the objects a step created in the branch are
// paired, in order, with those its real execution created, and later
// steps' targets and parameters (at any depth) are given the real ids.
func TestApplyMapsCreatedIDs(t *testing.T) {
	ids := map[string]string{}
	mapCreated(ids,
		[]models.Edit{{Op: models.EditCreateObject, ObjectID: "b1"}, {Op: models.EditUpdateObject, ObjectID: "x"}, {Op: models.EditCreateObject, ObjectID: "b2"}},
		[]models.Edit{{Op: models.EditCreateObject, ObjectID: "r1"}, {Op: models.EditCreateObject, ObjectID: "r2"}})
	if !reflect.DeepEqual(ids, map[string]string{"b1": "r1", "b2": "r2"}) {
		t.Fatalf("ids %v", ids)
	}
	got := mapParams(ids, map[string]any{"one": "b1", "many": []any{"b2", "other", 3}, "nested": map[string]any{"ref": "b1"}, "none": nil})
	want := map[string]any{"one": "r1", "many": []any{"r2", "other", 3}, "nested": map[string]any{"ref": "r1"}, "none": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("params %v", got)
	}
	if mapParams(ids, nil) != nil || mapID(ids, "b2") != "r2" || mapID(ids, "q") != "q" {
		t.Errorf("nil params or ids")
	}
}

// TestNetLinks: a link created and deleted again in the branch is no
// change.
func TestNetLinks(t *testing.T) {
	got := netLinks([]models.Edit{
		{Op: models.EditCreateLink, LinkID: "l1"},
		{Op: models.EditCreateLink, LinkID: "l2"},
		{Op: models.EditDeleteLink, LinkID: "l1"},
		{Op: models.EditDeleteLink, LinkID: "main"},
	})
	if len(got) != 2 || got[0].LinkID != "l2" || got[1].LinkID != "main" || got[1].Change != whatif.Deleted {
		t.Errorf("%+v", got)
	}
}
