package executions

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/workflows"
)

// downTemporal returns a client of a Temporal frontend that is down: a
// loopback port nothing listens on, so every workflow start fails.
func downTemporal(t *testing.T) client.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newService(t *testing.T, db *gorm.DB) *Service {
	eng := engine.New(engine.Deps{DB: db})
	starter := workflows.NewStarter(downTemporal(t), workflows.StarterOptions{TaskQueue: "down"})
	return New(db, nil, eng, starter, Options{BatchMaxItems: 100, BatchSyncMax: 10, ExecuteTimeout: time.Second})
}

var (
	action = &engine.ActionType{ID: "00000000-0000-4000-8000-0000000000a1", Version: 1,
		ActionDefinition: domain.ActionDefinition{Name: "open-ticket"}}
	actor = &models.User{ID: "00000000-0000-4000-8000-0000000000b1", Username: "alice"}
)

func batchOf(n int, key string) BatchRequest {
	r := BatchRequest{Action: action, Actor: actor, IdempotencyKey: key}
	for i := range n {
		r.Items = append(r.Items, BatchItem{Parameters: map[string]any{"title": i}})
	}
	return r
}

func statuses(t *testing.T, db *gorm.DB) map[string]int {
	t.Helper()
	var rows []models.Execution
	if err := db.Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Kind+"/"+r.Status]++
	}
	return out
}

// A batch whose workflow cannot start leaves no row queued: without an
// Idempotency-Key the batch and every item are recorded failed
// (Unavailable); single executions follow the same rule.
func TestUnstartedWorkLeavesNothingQueued(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		s := newService(t, db)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := s.SubmitBatch(ctx, batchOf(25, "")); !apperr.Is(err, apperr.Unavailable) {
			t.Fatalf("SubmitBatch with Temporal down: %v, want Unavailable", err)
		}
		_, err := s.Submit(ctx, Request{Action: action, Actor: actor, Kind: models.KindExecute}, false)
		if !apperr.Is(err, apperr.Unavailable) {
			t.Fatalf("Submit with Temporal down: %v, want Unavailable", err)
		}
		got := statuses(t, db)
		want := map[string]int{"batch/failed": 1, "batch-item/failed": 25, "execute/failed": 1}
		if len(got) != len(want) || got["batch/failed"] != 1 || got["batch-item/failed"] != 25 || got["execute/failed"] != 1 {
			t.Fatalf("rows by kind/status = %v, want %v", got, want)
		}
		var item models.Execution
		db.Where("kind = ?", models.KindBatchItem).Take(&item)
		if item.ErrorCode != string(apperr.Unavailable) || item.FinishedAt == nil {
			t.Errorf("an item of the unstarted batch: %+v", item)
		}
	})
}

// With an Idempotency-Key the rows wait for the retry that resumes them:
// the same key and body find the same batch (and try its start again),
// another body with that key is IdempotencyConflict.
func TestBatchIdempotencyKey(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		s := newService(t, db)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := s.SubmitBatch(ctx, batchOf(3, "k1")); !apperr.Is(err, apperr.Unavailable) {
			t.Fatalf("first SubmitBatch: %v, want Unavailable", err)
		}
		if _, err := s.SubmitBatch(ctx, batchOf(3, "k1")); !apperr.Is(err, apperr.Unavailable) {
			t.Fatalf("retry with the key while Temporal is still down: %v, want Unavailable", err)
		}
		if got := statuses(t, db); got["batch/queued"] != 1 || got["batch-item/queued"] != 3 || len(got) != 2 {
			t.Fatalf("rows after two keyed attempts = %v, want one batch of 3, queued for a retry", got)
		}
		if _, err := s.SubmitBatch(ctx, batchOf(4, "k1")); !apperr.Is(err, apperr.IdempotencyConflict) {
			t.Fatalf("another body with the key: %v, want IdempotencyConflict", err)
		}
		if _, err := s.Submit(ctx, Request{Action: action, Actor: actor, Kind: models.KindExecute, IdempotencyKey: "k1"}, false); !apperr.Is(err, apperr.IdempotencyConflict) {
			t.Fatalf("a single execution with the batch's key: %v, want IdempotencyConflict", err)
		}
		if _, err := s.SubmitBatch(ctx, BatchRequest{Action: action, Actor: actor}); !apperr.Is(err, apperr.InvalidArgument) {
			t.Fatalf("an empty batch: %v", err)
		}
		if _, err := s.SubmitBatch(ctx, batchOf(101, "")); !apperr.Is(err, apperr.BatchTooLarge) {
			t.Fatalf("a batch over the limit: %v", err)
		}
	})
}

// While Temporal cannot be asked, the sweep of abandoned executions
// leaves every row queued: a row is failed only when Temporal says its
// workflow does not exist.
func TestFailAbandonedNeedsTemporalsWord(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		s := newService(t, db)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := s.SubmitBatch(ctx, batchOf(3, "k-abandoned")); !apperr.Is(err, apperr.Unavailable) {
			t.Fatalf("SubmitBatch with Temporal down: %v, want Unavailable", err)
		}
		n, err := s.FailAbandoned(ctx, time.Now().Add(2*DefaultAbandonAfter))
		if err == nil || n != 0 {
			t.Fatalf("FailAbandoned with Temporal down: %d, %v; want an error and nothing failed", n, err)
		}
		if got := statuses(t, db); got["batch/queued"] != 1 || got["batch-item/queued"] != 3 || len(got) != 2 {
			t.Fatalf("rows = %v, want the batch and its items still queued", got)
		}
	})
}
