package automations_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/automations"
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// fakeStarter records the starts asked of it and answers an execution id
// per key, as executions.Service does for an idempotency key; failNext
// makes its next start fail as a crash would, after the start.
type fakeStarter struct {
	mu       sync.Mutex
	starts   []automations.StartRequest
	failNext bool
}

func (f *fakeStarter) Start(_ context.Context, r automations.StartRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, r)
	if f.failNext {
		f.failNext = false
		return "", errors.New("the process died after the start")
	}
	return execFor(r.Key), nil
}

// execFor is the fake execution id of key (a UUID, as the column holds).
func execFor(key string) string { return uuid.NewSHA1(uuid.NameSpaceURL, []byte(key)).String() }

func (f *fakeStarter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

// event writes an undispatched object event as the outbox would.
func event(t *testing.T, db *gorm.DB, typeID, objectID, change string, depth int, after map[string]any) uint64 {
	t.Helper()
	ev := models.AutomationEvent{Source: models.EventSourceObject, Subject: objectID, ExecutionID: "e", ObjectTypeID: typeID,
		ObjectID: objectID, Change: change, Depth: depth, After: models.NewNumJSON(after)}
	if err := db.Create(&ev).Error; err != nil {
		t.Fatal(err)
	}
	return ev.Seq
}

func firings(t *testing.T, db *gorm.DB) []models.AutomationFiring {
	t.Helper()
	var fs []models.AutomationFiring
	if err := db.Order("id").Find(&fs).Error; err != nil {
		t.Fatal(err)
	}
	return fs
}

func dispatchAll(t *testing.T, d *automations.Dispatcher) {
	t.Helper()
	for {
		n, err := d.DispatchOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// TestDispatchFiresOncePerAutomationAndEvent: a matching event starts
// one execution with the rendered parameters and the object as target;
// a change the trigger does not name, another type and a paused
// automation start none; a second pass, a pass over an event whose mark
// was lost, and a pass after a start that died before its record start
// nothing new (the retry's start carries the same key).
func TestDispatchFiresOncePerAutomationAndEvent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := setup(t, db)
		sp := valid()
		sp.Trigger.On = []string{"updated"}
		sp.Parameters = map[string]string{"status": "seen {{ object.properties.status }}", "note": "{{ object.properties.n }}"}
		a := enginetest.Must(s.Create(ctx, enginetest.Admin.ID, sp))(t)
		paused := valid()
		paused.Name, paused.Paused, paused.Trigger.On = "paused", true, []string{"updated"}
		enginetest.Must(s.Create(ctx, enginetest.Admin.ID, paused))(t)
		var ticket models.ObjectType
		if err := db.Take(&ticket, "name = ?", "Ticket").Error; err != nil {
			t.Fatal(err)
		}
		fake := &fakeStarter{}
		d := &automations.Dispatcher{DB: db, Start: fake}
		seq := event(t, db, ticket.ID, "11111111-1111-1111-1111-111111111111", "updated", 0, map[string]any{"status": "open", "n": 7})
		event(t, db, ticket.ID, "22222222-2222-2222-2222-222222222222", "created", 0, nil)
		event(t, db, "other-type", "33333333-3333-3333-3333-333333333333", "updated", 0, nil)
		dispatchAll(t, d)
		if fake.count() != 1 {
			t.Fatalf("%d starts, want 1: %+v", fake.count(), fake.starts)
		}
		r := fake.starts[0]
		if r.OwnerID != enginetest.Admin.ID || r.TargetID != "11111111-1111-1111-1111-111111111111" || r.AutomationID != a.ID ||
			r.Depth != 1 || r.Parameters["status"] != "seen open" || fmt.Sprint(r.Parameters["note"]) != "7" ||
			r.Key != fmt.Sprintf("automation:%s:event:%d", a.ID, seq) {
			t.Fatalf("start %+v", r)
		}
		fs := firings(t, db)
		if len(fs) != 1 || fs[0].Status != models.FiringStarted || *fs[0].ExecutionID != execFor(r.Key) || fs[0].EventSeq != seq {
			t.Fatalf("firings %+v", fs)
		}
		// The mark lost (a crash after the firing's record): the firing
		// stands, nothing starts again.
		if err := db.Model(&models.AutomationEvent{}).Where("seq = ?", seq).Update("dispatched_at", nil).Error; err != nil {
			t.Fatal(err)
		}
		dispatchAll(t, d)
		if fake.count() != 1 || len(firings(t, db)) != 1 {
			t.Fatalf("after a lost mark: %d starts, %d firings", fake.count(), len(firings(t, db)))
		}
		// A start that dies before its record: the event stays, the next
		// pass starts with the same key (executions.Service answers the
		// first execution for it) and records one firing.
		again := event(t, db, ticket.ID, "11111111-1111-1111-1111-111111111111", "updated", 0, map[string]any{"status": "closed"})
		fake.failNext = true
		if _, err := d.DispatchOnce(ctx); err == nil {
			t.Fatal("a failed start was not reported")
		}
		dispatchAll(t, d)
		if fake.count() != 3 || fake.starts[1].Key != fake.starts[2].Key {
			t.Fatalf("starts %+v", fake.starts)
		}
		if fs := firings(t, db); len(fs) != 2 || fs[1].EventSeq != again {
			t.Fatalf("firings %+v", fs)
		}
	})
}

// TestDispatchStopsAtTheDepthLimit: an event at the limit's depth records
// a skip and starts nothing; one below it starts an execution one deeper.
func TestDispatchStopsAtTheDepthLimit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := setup(t, db)
		sp := valid()
		sp.Trigger.On = []string{"updated"}
		enginetest.Must(s.Create(ctx, enginetest.Admin.ID, sp))(t)
		var ticket models.ObjectType
		if err := db.Take(&ticket, "name = ?", "Ticket").Error; err != nil {
			t.Fatal(err)
		}
		fake := &fakeStarter{}
		d := &automations.Dispatcher{DB: db, Start: fake, MaxDepth: 2}
		event(t, db, ticket.ID, "11111111-1111-1111-1111-111111111111", "updated", 1, nil)
		event(t, db, ticket.ID, "11111111-1111-1111-1111-111111111111", "updated", 2, nil)
		dispatchAll(t, d)
		fs := firings(t, db)
		if fake.count() != 1 || fake.starts[0].Depth != 2 || len(fs) != 2 ||
			fs[0].Status != models.FiringStarted || fs[1].Status != models.FiringSkipped || fs[1].Depth != 3 {
			t.Fatalf("starts %+v, firings %+v", fake.starts, fs)
		}
	})
}

// TestDispatchKeepsEachObjectsOrder: the events of one object start in
// their order, each pass taking at most one of an object, and two
// dispatchers at once (replicas, on Postgres) start each event once.
func TestDispatchKeepsEachObjectsOrder(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := setup(t, db)
		sp := valid()
		sp.Trigger.On = []string{"updated"}
		sp.Parameters = map[string]string{"status": "{{ object.properties.status }}"}
		enginetest.Must(s.Create(ctx, enginetest.Admin.ID, sp))(t)
		var ticket models.ObjectType
		if err := db.Take(&ticket, "name = ?", "Ticket").Error; err != nil {
			t.Fatal(err)
		}
		objs := []string{"11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"}
		for i := range 10 {
			for _, o := range objs {
				event(t, db, ticket.ID, o, "updated", 0, map[string]any{"status": fmt.Sprint(i)})
			}
		}
		fake := &fakeStarter{}
		replicas := 1
		if models.IsPostgres(db) {
			replicas = 2
		}
		var wg sync.WaitGroup
		for range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := &automations.Dispatcher{DB: db, Start: fake, Batch: 3}
				for {
					n, err := d.DispatchOnce(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if n == 0 {
						var left int64
						db.Model(&models.AutomationEvent{}).Where("dispatched_at IS NULL").Count(&left)
						if left == 0 {
							return
						}
						time.Sleep(time.Millisecond) // the other replica holds them
					}
				}
			}()
		}
		wg.Wait()
		if fake.count() != 20 {
			t.Fatalf("%d starts, want 20", fake.count())
		}
		next := map[string]int{}
		for _, r := range fake.starts {
			if want := fmt.Sprint(next[r.TargetID]); r.Parameters["status"] != want {
				t.Fatalf("object %s: started %v before %s", r.TargetID, r.Parameters["status"], want)
			}
			next[r.TargetID]++
		}
	})
}

// TestPruneKeepsWhatIsWaiting: pruning deletes dispatched events only;
// an event still waiting stays whatever its age.
func TestPruneKeepsWhatIsWaiting(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		d := &automations.Dispatcher{DB: db, Start: &fakeStarter{}}
		event(t, db, "t", "11111111-1111-1111-1111-111111111111", "updated", 0, nil)
		dispatchAll(t, d)
		waiting := event(t, db, "t", "22222222-2222-2222-2222-222222222222", "updated", 0, nil)
		if err := d.Prune(ctx, -time.Minute); err != nil {
			t.Fatal(err)
		}
		var left []models.AutomationEvent
		if err := db.Find(&left).Error; err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0].Seq != waiting {
			t.Fatalf("left %+v, want only event %d", left, waiting)
		}
	})
}
