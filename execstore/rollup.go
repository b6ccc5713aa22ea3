package execstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"
)

// The rollup (models.ExecutionRollup) is kept here, beside every write
// that creates a row or moves its status, in the same transaction: a
// create adds one to its bucket, a status change takes one from the old
// status's bucket and adds one to the new. Each transaction applies its
// changes as one upsert per bucket, in key order, after locking the
// execution rows it moves, so concurrent writers on Postgres wait for
// each other rather than deadlock, and SQLite runs one writer at a time.

// bucket is a rollup row's key.
type bucket struct {
	hour                        time.Time
	action, actor, status, code string
}

// rowKey is what places an execution in its bucket.
type rowKey struct {
	ID, ActionTypeID, ActorID, Status, ErrorCode string
	CreatedAt                                    time.Time
}

func keyOf(ex *models.Execution) rowKey {
	return rowKey{ex.ID, ex.ActionTypeID, ex.ActorID, ex.Status, ex.ErrorCode, ex.CreatedAt}
}

type count struct {
	n       int64
	example string
}

// deltas are changes to the rollup's counts.
type deltas map[bucket]*count

// add counts n (±1) of row r in status and code.
func (d deltas) add(r rowKey, status, code string, n int64) {
	b := bucket{r.CreatedAt.UTC().Truncate(time.Hour), r.ActionTypeID, r.ActorID, status, code}
	c := d[b]
	if c == nil {
		c = &count{}
		d[b] = c
	}
	c.n += n
	if n > 0 && r.ID > c.example {
		c.example = r.ID
	}
}

// upsertRollup adds one bucket's count. It is a fixed statement rather
// than a gorm upsert built per call: every status change runs it, and
// the text, the same each time, is prepared once per connection.
const upsertRollup = `INSERT INTO execution_rollups (hour, action_type_id, actor_id, status, error_code, n, example_id)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (hour, action_type_id, actor_id, status, error_code) DO UPDATE SET
n = execution_rollups.n + excluded.n,
example_id = CASE WHEN excluded.example_id > execution_rollups.example_id THEN excluded.example_id ELSE execution_rollups.example_id END`

// apply writes d to the rollup in tx, bucket by bucket in key order.
func (d deltas) apply(ctx context.Context, tx *gorm.DB) error {
	keys := make([]bucket, 0, len(d))
	for b, c := range d {
		if c.n != 0 || c.example != "" {
			keys = append(keys, b)
		}
	}
	slices.SortFunc(keys, func(a, b bucket) int {
		return cmp.Or(a.hour.Compare(b.hour), cmp.Compare(a.action, b.action), cmp.Compare(a.actor, b.actor),
			cmp.Compare(a.status, b.status), cmp.Compare(a.code, b.code))
	})
	for _, b := range keys {
		c := d[b]
		if err := tx.WithContext(ctx).Exec(upsertRollup, b.hour, b.action, b.actor, b.status, b.code, c.n, c.example).Error; err != nil {
			return fmt.Errorf("count rollup bucket %s %s: %w", b.hour.Format(time.RFC3339), b.status, err)
		}
	}
	return nil
}

// move changes the rows matching where (a guard on their status) to cols
// inside tx and moves their counts from their old buckets to the new,
// returning how many rows moved. The rows are read first, locked on
// Postgres (in id order) and under SQLite's one writer, so the counts
// taken are those of the rows the update changes.
func move(ctx context.Context, tx *gorm.DB, cols map[string]any, where string, args ...any) (int64, error) {
	q := tx.WithContext(ctx).Model(&models.Execution{})
	if models.IsPostgres(q) {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var rows []rowKey
	err := q.Select("id, action_type_id, actor_id, status, error_code, created_at").
		Where(where, args...).Order("id").Find(&rows).Error
	if err != nil {
		return 0, fmt.Errorf("read the rows to move: %w", err)
	}
	status, _ := cols["status"].(string)
	d, moved := deltas{}, int64(0)
	for chunk := range slices.Chunk(rows, 1000) {
		ids := make([]string, len(chunk))
		for i, r := range chunk {
			ids[i] = r.ID
			code := r.ErrorCode
			if c, ok := cols["error_code"].(string); ok {
				code = c
			}
			d.add(r, r.Status, r.ErrorCode, -1)
			d.add(r, status, code, 1)
		}
		res := tx.WithContext(ctx).Model(&models.Execution{}).Where("id IN ?", ids).Where(where, args...).Updates(cols)
		if res.Error != nil {
			return 0, res.Error
		}
		moved += res.RowsAffected
	}
	if moved != int64(len(rows)) {
		// Cannot happen with the rows locked; a count off by a row would
		// go unnoticed, so refuse instead.
		return 0, fmt.Errorf("moved %d of the %d rows read", moved, len(rows))
	}
	return moved, d.apply(ctx, tx)
}

// inTx runs f in a new transaction over s's database.
func (s *Store) inTx(ctx context.Context, f func(tx *gorm.DB) error) error {
	return s.db.WithContext(ctx).Transaction(f)
}

// RollupBackfill names the one-time data migration filling the rollup.
const RollupBackfill = "execution_rollups"

// BackfillRollup fills the rollup from the executions table, rows
// written by versions without one included, unless it was done before,
// and reports whether it ran. It runs in one transaction that first
// records itself done (a second replica waits, then finds it done) and,
// on Postgres, holds the executions table against writes (SHARE lock), so
// no row is counted twice or missed; SQLite has one writer anyway.
func (s *Store) BackfillRollup(ctx context.Context) (bool, error) {
	ran := false
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).
			Create(&models.DataMigration{Name: RollupBackfill, DoneAt: time.Now().UTC()})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		ran = true
		if models.IsPostgres(tx) {
			if err := tx.Exec("LOCK TABLE executions IN SHARE MODE").Error; err != nil {
				return err
			}
		}
		if err := tx.Where("1 = 1").Delete(&models.ExecutionRollup{}).Error; err != nil {
			return err
		}
		return recount(ctx, tx)
	})
	if err != nil {
		return false, fmt.Errorf("fill the execution rollup: %w", err)
	}
	return ran, nil
}

// recount adds every execution row to the rollup in tx, a page of rows
// at a time (by id).
func recount(ctx context.Context, tx *gorm.DB) error {
	const page = 10000
	after := ""
	for {
		var rows []rowKey
		err := tx.WithContext(ctx).Model(&models.Execution{}).
			Select("id, action_type_id, actor_id, status, error_code, created_at").
			Where("id > ?", after).Order("id").Limit(page).Find(&rows).Error
		if err != nil {
			return fmt.Errorf("read executions after %q: %w", after, err)
		}
		d := deltas{}
		for _, r := range rows {
			d.add(r, r.Status, r.ErrorCode, 1)
		}
		if err := d.apply(ctx, tx); err != nil {
			return err
		}
		if len(rows) < page {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}
