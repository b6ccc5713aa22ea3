package execstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"
)

// The rollups (models.ExecutionRollup per actor and hour,
// models.ExecutionTotal for everyone per day) are kept here, beside every
// write that creates a row or moves its status, in the same transaction:
// a create adds one to its buckets, a status change takes one from the
// old status's buckets and adds one to the new, and a row that gets a
// finished time adds one to its duration's histogram bin. Each
// transaction writes its changes as one multi-row upsert per table (a
// status change: two rows of the rollup, two of the totals, naming only
// the histogram bin it touches), in key order, after locking the
// execution rows it moves, so concurrent writers on Postgres wait for
// each other rather than deadlock, and SQLite runs one writer at a time.
//
// Why no hourly totals (schema version 5): version 4 kept the totals per
// hour too, for the hours before a window's first midnight, which made a
// status change write six rows instead of four, and cost the 1,000-item
// batch and the throughput of actionbench 5-20% (BENCHMARKS.md, Action
// engine). Those at most 23 hours are now read from the per-actor rollup,
// summed over the actors (package insights): a few thousand rows at 1M
// executions, bounded by the hours' executions. The other ways weighed
// are in docs/observability.md (Insights, Writes).

// bucket is a rollup or totals row's key.
type bucket struct {
	// grain is "" for the per-actor rollup's hour, else the totals'
	// models.GrainDay (actor "").
	grain                       string
	start                       time.Time
	action, actor, status, code string
}

// rowKey is what places an execution in its buckets.
type rowKey struct {
	ID, ActionTypeID, ActorID, Status, ErrorCode string
	CreatedAt                                    time.Time
	FinishedAt                                   *time.Time
}

func keyOf(ex *models.Execution) rowKey {
	return rowKey{ex.ID, ex.ActionTypeID, ex.ActorID, ex.Status, ex.ErrorCode, ex.CreatedAt, ex.FinishedAt}
}

type count struct {
	n       int64
	example string
	hist    [models.Bins]int64
}

// deltas are changes to the rollups' counts.
type deltas map[bucket]*count

// rowCols are the columns one execution's state places it by.
type rowCols struct {
	status, code string
	finished     *time.Time
}

// stateOf is r's state as read.
func stateOf(r rowKey) rowCols { return rowCols{r.Status, r.ErrorCode, r.FinishedAt} }

// add counts n (±1) of row r in state st: in its hour by its actor, and
// in its day for everyone; with a finished time, in the bin of its
// duration too.
func (d deltas) add(r rowKey, st rowCols, n int64) {
	at := r.CreatedAt.UTC()
	hour := at.Truncate(time.Hour)
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	bin := -1
	if st.finished != nil {
		bin = models.DurationBin(r.CreatedAt, *st.finished)
	}
	for _, b := range [...]bucket{
		{"", hour, r.ActionTypeID, r.ActorID, st.status, st.code},
		{models.GrainDay, day, r.ActionTypeID, "", st.status, st.code},
	} {
		c := d[b]
		if c == nil {
			c = &count{}
			d[b] = c
		}
		c.n += n
		if n > 0 && r.ID > c.example {
			c.example = r.ID
		}
		if bin >= 0 {
			c.hist[bin] += n
		}
	}
}

// addRow counts n (±1) of ex as it is.
func (d deltas) addRow(ex *models.Execution, n int64) {
	r := keyOf(ex)
	d.add(r, stateOf(r), n)
}

// upsert is the multi-row statement adding rows counts to table, whose
// key is keyCols, with the histogram bins in the set bins (a bit per
// bin): a status change touches one bin or none, so its statement names
// that bin alone rather than binding forty. It is built once per table,
// row count and bin set: every status change runs it, and the text, the
// same each time, is prepared once per connection. A bin nothing fell
// in stays NULL.
func upsert(table string, keyCols []string, rows int, bins uint64) string {
	k := upsertKey{table, rows, bins}
	if s, ok := upserts.Load(k); ok {
		return s.(string)
	}
	cols := append(append([]string(nil), keyCols...), "n", "example_id")
	sets := []string{"n = " + table + ".n + excluded.n",
		"example_id = CASE WHEN excluded.example_id > " + table + ".example_id THEN excluded.example_id ELSE " + table + ".example_id END"}
	for i := range models.Bins {
		if bins&(1<<i) == 0 {
			continue
		}
		c := models.HistogramColumn(i)
		cols = append(cols, c)
		sets = append(sets, fmt.Sprintf("%[1]s = CASE WHEN excluded.%[1]s IS NULL THEN %[2]s.%[1]s ELSE COALESCE(%[2]s.%[1]s, 0) + excluded.%[1]s END", c, table))
	}
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	s := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ") +
		" ON CONFLICT (" + strings.Join(keyCols, ", ") + ") DO UPDATE SET " + strings.Join(sets, ", ")
	upserts.Store(k, s)
	return s
}

type upsertKey struct {
	table string
	rows  int
	bins  uint64
}

var upserts sync.Map

var (
	rollupKey = []string{"hour", "action_type_id", "actor_id", "status", "error_code"}
	totalsKey = []string{"grain", "start", "action_type_id", "status", "error_code"}
)

// perUpsert bounds the rows of one statement (a loader's or backfill's
// deltas are large): 100 rows of up to 47 values stays under both
// dialects' limits on bound values.
const perUpsert = 100

// apply writes d to the rollup and the totals in tx, in key order,
// rollup first: on Postgres as one statement when d fits in one
// (pgApply), else one statement per table (per perUpsert rows).
func (d deltas) apply(ctx context.Context, tx *gorm.DB) error {
	_, err := d.applyAfter(ctx, tx, guard{})
	return err
}

// guard is an UPDATE of execution rows whose count changes d holds: the
// counts are written only when it changed a row. The zero guard writes
// them unconditionally.
type guard struct {
	sql  string
	vals []any
}

// applyAfter runs g, then writes d if g changed a row (or there is no
// g), and reports whether it did. On Postgres, when d fits, the update
// and both upserts are one statement (pgApply): one round trip where
// they took three, or five as a transaction of their own.
func (d deltas) applyAfter(ctx context.Context, tx *gorm.DB, g guard) (bool, error) {
	rollup, totals := d.sorted()
	q := tx.WithContext(ctx)
	if oneStatement(q, rollup, totals) {
		stmt, vals := d.pgApply(g, rollup, totals)
		res := q.Exec(stmt, vals...)
		if res.Error != nil {
			return false, fmt.Errorf("count %d buckets: %w", len(rollup)+len(totals), res.Error)
		}
		return g.sql == "" || res.RowsAffected > 0, nil
	}
	if g.sql != "" {
		res := q.Exec(g.sql, g.vals...)
		if res.Error != nil || res.RowsAffected == 0 {
			return false, res.Error
		}
	}
	for _, t := range []struct {
		table string
		key   []string
		rows  []bucket
	}{{"execution_rollups", rollupKey, rollup}, {"execution_totals", totalsKey, totals}} {
		for chunk := range slices.Chunk(t.rows, perUpsert) {
			bins := d.binsOf(chunk)
			if err := q.Exec(upsert(t.table, t.key, len(chunk), bins), d.values(chunk, bins, nil)...).Error; err != nil {
				return false, fmt.Errorf("count %d buckets into %s: %w", len(chunk), t.table, err)
			}
		}
	}
	return true, nil
}

// oneStatement reports whether the buckets go in one Postgres statement.
// Every change counts a row in both tables, so both have buckets.
func oneStatement(db *gorm.DB, rollup, totals []bucket) bool {
	return models.IsPostgres(db) && len(rollup) > 0 && len(totals) > 0 &&
		len(rollup) <= perUpsert && len(totals) <= perUpsert
}

// sorted are d's buckets to write, per table, in key order.
func (d deltas) sorted() (rollup, totals []bucket) {
	for b, c := range d {
		if c.n == 0 && c.example == "" && c.hist == [models.Bins]int64{} {
			continue
		}
		if b.grain == "" {
			rollup = append(rollup, b)
		} else {
			totals = append(totals, b)
		}
	}
	for _, rows := range [][]bucket{rollup, totals} {
		slices.SortFunc(rows, func(a, b bucket) int {
			return cmp.Or(cmp.Compare(a.grain, b.grain), a.start.Compare(b.start), cmp.Compare(a.action, b.action),
				cmp.Compare(a.actor, b.actor), cmp.Compare(a.status, b.status), cmp.Compare(a.code, b.code))
		})
	}
	return rollup, totals
}

// binsOf is the set of histogram bins rows touch (a bit per bin).
func (d deltas) binsOf(rows []bucket) uint64 {
	var bins uint64
	for _, b := range rows {
		for i, h := range d[b].hist {
			if h != 0 {
				bins |= 1 << i
			}
		}
	}
	return bins
}

// values appends to vals the bound values of rows, in upsert's column
// order, with the bins in the set bins.
func (d deltas) values(rows []bucket, bins uint64, vals []any) []any {
	for _, b := range rows {
		c := d[b]
		if b.grain == "" {
			vals = append(vals, b.start, b.action, b.actor, b.status, b.code)
		} else {
			vals = append(vals, b.grain, b.start, b.action, b.status, b.code)
		}
		vals = append(vals, c.n, c.example)
		for i, h := range c.hist {
			switch {
			case bins&(1<<i) == 0:
			case h == 0:
				vals = append(vals, nil)
			default:
				vals = append(vals, h)
			}
		}
	}
	return vals
}

// pgApply is the one Postgres statement that runs g and writes d's
// buckets:
//
//	WITH g AS (UPDATE executions ... RETURNING 1),
//	     r AS (INSERT INTO execution_rollups ... WHERE (SELECT count(*) FROM g) > 0 ... RETURNING 1)
//	INSERT INTO execution_totals ... WHERE (SELECT count(*) FROM r) > 0 ...
//
// Postgres runs a WITH clause's writes in an order it does not promise;
// each count(*) reads its sub-statement to the end before the next
// writes a row, so the rows are locked as by separate statements (the
// execution row, then the rollup's, then the totals', each in key
// order), and concurrent writers still wait for each other rather than
// deadlock.
func (d deltas) pgApply(g guard, rollup, totals []bucket) (string, []any) {
	rb, tb := d.binsOf(rollup), d.binsOf(totals)
	k := pgApplyKey{g.sql, len(rollup), len(totals), rb, tb}
	stmt, ok := pgApplies.Load(k)
	if !ok {
		var sb strings.Builder
		sb.WriteString("WITH ")
		gate := "true"
		if g.sql != "" {
			returning := " RETURNING 1"
			if strings.Contains(g.sql, " RETURNING ") {
				returning = "" // gorm's INSERT reads back columns of its own
			}
			sb.WriteString("g AS (" + g.sql + returning + "), ")
			gate = "(SELECT count(*) FROM g) > 0"
		}
		sb.WriteString("r AS (" + upsertSelect("execution_rollups", rollupKey, rollupTypes, len(rollup), rb, gate) + " RETURNING 1) ")
		sb.WriteString(upsertSelect("execution_totals", totalsKey, totalsTypes, len(totals), tb, "(SELECT count(*) FROM r) > 0"))
		stmt, _ = pgApplies.LoadOrStore(k, sb.String())
	}
	vals := append([]any(nil), g.vals...)
	vals = d.values(rollup, rb, vals)
	return stmt.(string), d.values(totals, tb, vals)
}

type pgApplyKey struct {
	guard      string
	rows, tots int
	rb, tb     uint64
}

var pgApplies sync.Map

// The Postgres types of the key columns (rollupKey, totalsKey): values in
// a SELECT are not typed by the columns they go to, as they are in an
// INSERT's VALUES.
var (
	rollupTypes = []string{"timestamptz", "text", "text", "text", "text"}
	totalsTypes = []string{"text", "timestamptz", "text", "text", "text"}
)

// upsertSelect is upsert's statement for Postgres with its rows selected
// where gate holds (a WHERE also keeps ON CONFLICT from reading as a
// join's ON).
func upsertSelect(table string, keyCols, keyTypes []string, rows int, bins uint64, gate string) string {
	cols := append(append([]string(nil), keyCols...), "n", "example_id")
	types := append(append([]string(nil), keyTypes...), "bigint", "text")
	for i := range models.Bins {
		if bins&(1<<i) != 0 {
			cols = append(cols, models.HistogramColumn(i))
			types = append(types, "bigint")
		}
	}
	one := make([]string, len(types))
	for i, t := range types {
		one[i] = "?::" + t
	}
	row := "(" + strings.Join(one, ", ") + ")"
	up := upsert(table, keyCols, rows, bins)
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") SELECT * FROM (VALUES " +
		strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ") + ") v WHERE " + gate +
		up[strings.Index(up, " ON CONFLICT "):]
}

// move changes the rows matching where (a guard on their status) to cols
// inside tx and moves their counts from their old buckets to the new,
// returning how many rows moved. The rows are read first, locked on
// Postgres (in id order) and under SQLite's one writer, so the counts
// taken are those of the rows the update changes.
func move(ctx context.Context, tx *gorm.DB, cols map[string]any, where string, args ...any) (int64, error) {
	d := deltas{}
	moved, err := moveCounting(ctx, tx, d, cols, where, args...)
	if err != nil {
		return 0, err
	}
	return moved, d.apply(ctx, tx)
}

// moveCounting is move, adding the counts' changes to d instead of
// writing them: a transaction that moves several sets of rows writes
// their counts in one apply, whose rows are locked in key order. Two
// applies in one transaction lock two sorted runs, and two such
// transactions can take the same buckets in opposite orders (a deadlock
// Postgres detected between batch abandonments and other writers).
func moveCounting(ctx context.Context, tx *gorm.DB, d deltas, cols map[string]any, where string, args ...any) (int64, error) {
	q := tx.WithContext(ctx).Model(&models.Execution{})
	if models.IsPostgres(q) {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var rows []rowKey
	err := q.Select(rowKeyCols).Where(where, args...).Order("id").Find(&rows).Error
	if err != nil {
		return 0, fmt.Errorf("read the rows to move: %w", err)
	}
	moved := int64(0)
	for chunk := range slices.Chunk(rows, 1000) {
		ids := make([]string, len(chunk))
		for i, r := range chunk {
			ids[i] = r.ID
			d.add(r, stateOf(r), -1)
			d.add(r, movedTo(r, cols), 1)
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
	return moved, nil
}

// rowKeyCols are the columns read into a rowKey.
const rowKeyCols = "id, action_type_id, actor_id, status, error_code, created_at, finished_at"

// movedTo is r's state after an update of cols.
func movedTo(r rowKey, cols map[string]any) rowCols {
	st := stateOf(r)
	if s, ok := cols["status"].(string); ok {
		st.status = s
	}
	if c, ok := cols["error_code"].(string); ok {
		st.code = c
	}
	if f, ok := cols["finished_at"].(*time.Time); ok {
		st.finished = f
	}
	return st
}

// inTx runs f in a new transaction over s's database.
func (s *Store) inTx(ctx context.Context, f func(tx *gorm.DB) error) error {
	return s.db.WithContext(ctx).Transaction(f)
}

// RollupBackfill names the one-time data migration that rebuilds the
// rollup and the totals with their histograms (schema version 4).
// Version 3's "execution_rollups" filled the rollup without them.
const RollupBackfill = "execution_rollups_v4"

// BackfillRollup rebuilds the rollup and the totals from the executions
// table, rows written by versions without them included, unless it was
// done before, and reports whether it ran (to the end).
//
// It works a day of creation times at a time, oldest first, each day in
// a transaction of its own that deletes the day's buckets and counts the
// day's rows again, then records the day as done (the data_migrations
// row's cursor). On Postgres that transaction holds the executions table
// against writes (SHARE lock) for the day only, so writers wait for one
// day's recount, not the whole table's; SQLite has one writer anyway. A
// write between two days is counted by the writer as usual: into a day
// already rebuilt, which is right, or into one not yet rebuilt, whose
// recount replaces it. A crash midway leaves the days before the cursor
// rebuilt and the rest as they were; the next start goes on from the
// cursor, and a day redone is recounted from scratch, so nothing counts
// twice.
func (s *Store) BackfillRollup(ctx context.Context) (bool, error) {
	ran := false
	for {
		done, err := s.backfillDay(ctx)
		if err != nil {
			return ran, fmt.Errorf("rebuild the execution rollups: %w", err)
		}
		if done {
			return ran, nil
		}
		ran = true
	}
}

// DropHourTotals deletes the hourly totals version 4 kept (grain
// models.GrainHour), which nothing writes or reads since version 5, and
// reports how many went. Every start runs it (app.MigrateData): after the
// first, it is one search of the primary key that finds nothing, so it
// needs no record of being done.
func (s *Store) DropHourTotals(ctx context.Context) (int64, error) {
	res := s.db.WithContext(ctx).Where("grain = ?", models.GrainHour).Delete(&models.ExecutionTotal{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete the hourly execution totals of version 4: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// backfillDay rebuilds the next day after the migration's cursor, or
// records the migration done when no day is left; done: nothing was left
// to do.
func (s *Store) backfillDay(ctx context.Context) (done bool, err error) {
	err = s.inTx(ctx, func(tx *gorm.DB) error {
		var m models.DataMigration
		err := tx.Clauses(clause.OnConflict{DoNothing: true}).
			Create(&models.DataMigration{Name: RollupBackfill, DoneAt: time.Now().UTC(), Cursor: models.CursorStart}).Error
		if err == nil {
			// Locked, so a second replica waits for this day and then
			// reads the cursor past it.
			q := tx
			if models.IsPostgres(tx) {
				q = q.Clauses(clause.Locking{Strength: "UPDATE"})
			}
			err = q.Take(&m, "name = ?", RollupBackfill).Error
		}
		if err != nil {
			return fmt.Errorf("read the migration's progress: %w", err)
		}
		if m.Cursor == "" {
			done = true
			return nil
		}
		var from time.Time // the beginning of time
		if m.Cursor != models.CursorStart {
			if from, err = time.Parse(time.RFC3339, m.Cursor); err != nil {
				return fmt.Errorf("read the migration's cursor %q: %w", m.Cursor, err)
			}
		}
		if models.IsPostgres(tx) {
			if err := tx.Exec("LOCK TABLE executions IN SHARE MODE").Error; err != nil {
				return err
			}
		}
		day, ok, err := nextDay(ctx, tx, from)
		if err != nil {
			return err
		}
		cursor := ""
		if ok {
			cursor = day.Add(24 * time.Hour).Format(time.RFC3339)
		}
		// Buckets of days without executions (left by rows since gone)
		// go too: the day's clear starts at the cursor.
		if err := recount(ctx, tx, from, day, ok); err != nil {
			return err
		}
		if afterDay != nil {
			if err := afterDay(day); err != nil {
				return err
			}
		}
		return tx.Model(&models.DataMigration{}).Where("name = ?", RollupBackfill).
			Updates(map[string]any{"cursor": cursor, "done_at": time.Now().UTC()}).Error
	})
	return done, err
}

// afterDay, set by tests, runs at the end of each day's transaction of
// the backfill; an error aborts it, as a crash would.
var afterDay func(day time.Time) error

// nextDay is the first day (UTC) holding executions created at or after
// from; ok false: none.
func nextDay(ctx context.Context, tx *gorm.DB, from time.Time) (time.Time, bool, error) {
	var first []time.Time
	err := tx.WithContext(ctx).Model(&models.Execution{}).Select("created_at").
		Where("created_at >= ?", from).Order("created_at").Limit(1).Scan(&first).Error
	if err != nil {
		return time.Time{}, false, fmt.Errorf("find the next day to rebuild: %w", err)
	}
	if len(first) == 0 {
		return time.Time{}, false, nil
	}
	at := first[0].UTC()
	return time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC), true, nil
}

// recount replaces the buckets from from to the end of day with a count
// of the executions created on day, a page of rows at a time (by id);
// with no day (ok false), it clears every bucket from from on.
func recount(ctx context.Context, tx *gorm.DB, from, day time.Time, ok bool) error {
	end := day.Add(24 * time.Hour)
	clear := func(col string) (string, []any) {
		if !ok {
			return col + " >= ?", []any{from}
		}
		return col + " >= ? AND " + col + " < ?", []any{from, end}
	}
	for _, m := range []struct {
		col   string
		model any
	}{{"hour", &models.ExecutionRollup{}}, {"start", &models.ExecutionTotal{}}} {
		where, args := clear(m.col)
		if err := tx.WithContext(ctx).Where(where, args...).Delete(m.model).Error; err != nil {
			return fmt.Errorf("clear the buckets from %s: %w", from.Format(time.DateOnly), err)
		}
	}
	if !ok {
		return nil
	}
	const page = 10000
	after := ""
	for {
		var rows []rowKey
		err := tx.WithContext(ctx).Model(&models.Execution{}).Select(rowKeyCols).
			Where("created_at >= ? AND created_at < ? AND id > ?", day, end, after).Order("id").Limit(page).Find(&rows).Error
		if err != nil {
			return fmt.Errorf("read executions of %s after %q: %w", day.Format(time.DateOnly), after, err)
		}
		d := deltas{}
		for _, r := range rows {
			d.add(r, stateOf(r), 1)
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
