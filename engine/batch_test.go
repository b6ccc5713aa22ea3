package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// Batch bookkeeping on both dialects: chunks list only unfinished items in
// order, totals count by status, and FinishBatch closes open items and the
// batch row once.
func TestBatchBookkeeping(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := New(Deps{DB: db})
		batch := models.Execution{ID: "b", Kind: models.KindBatch, ActionTypeID: "a", ActionTypeName: "a", ActorID: "u",
			Status: models.StatusQueued, TotalItems: 5}
		if err := db.Create(&batch).Error; err != nil {
			t.Fatal(err)
		}
		statuses := []string{models.StatusSucceeded, models.StatusFailed, models.StatusQueued, models.StatusQueued, models.StatusSucceeded}
		for i, s := range statuses {
			id := fmt.Sprintf("i%d", i)
			if err := db.Create(&models.Execution{ID: id, Kind: models.KindBatchItem, ActionTypeID: "a", ActionTypeName: "a",
				ActorID: "u", BatchID: &batch.ID, BatchIndex: i, Status: s}).Error; err != nil {
				t.Fatal(err)
			}
		}
		ids, err := e.ListBatchChunk(ctx, "b", 1, 4)
		if err != nil || fmt.Sprint(ids) != "[i2 i3]" {
			t.Fatalf("chunk [1,4) = %v, %v", ids, err)
		}
		tot, err := e.Totals(ctx, "b")
		if err != nil || tot.Total != 5 || tot.Succeeded != 2 || tot.Failed != 1 || tot.Pending != 2 || tot.Status != models.StatusRunning {
			t.Fatalf("totals = %+v, %v", tot, err)
		}
		tot, err = e.FinishBatch(ctx, "b")
		if err != nil || tot.Failed != 3 || tot.Pending != 0 || tot.Status != models.StatusPartial {
			t.Fatalf("finish = %+v, %v", tot, err)
		}
		var got models.Execution
		if err := db.Take(&got, "id = ?", "b").Error; err != nil || got.Status != models.StatusPartial || got.FinishedAt == nil {
			t.Fatalf("batch row = %+v, %v", got, err)
		}
		if _, err := e.FinishBatch(ctx, "b"); err != nil {
			t.Fatalf("second finish: %v", err)
		}
	})
}

// A batch's progress is read while it runs, often (clients poll it): the
// count must come from the (batch_id, status) index alone, not from a
// lookup of every item row.
func TestTotalsUseCoveringIndex(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	var plan []struct {
		ID, Parent, Notused int
		Detail              string
	}
	err := db.Raw("EXPLAIN QUERY PLAN SELECT status, count(*) AS n FROM executions WHERE batch_id = ? GROUP BY status", "b").Scan(&plan).Error
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) == 0 || !strings.Contains(fmt.Sprint(plan), "COVERING INDEX idx_exec_batch_status") {
		t.Fatalf("plan does not use the covering index: %+v", plan)
	}
}
