package models

import (
	"fmt"
	"math"
	"time"
)

// rollupModels are the action log's aggregates.
var rollupModels = []any{&ExecutionRollup{}, &ExecutionTotal{}, &DataMigration{}}

// ExecutionRollup counts the executions created in one hour of one action
// type by one actor that are now in one status with one error code, so a
// window's counts read a few rows per hour instead of every execution.
// execstore keeps it, in the transaction of every row create and status
// change; ExampleID is the greatest id ever counted into the bucket (for
// a failed bucket, which rows never leave, the greatest id in it). It is
// what a reader limited to their own executions reads.
type ExecutionRollup struct {
	Hour         time.Time `gorm:"primaryKey;autoIncrement:false;index:idx_rollup_actor,priority:2"`
	ActionTypeID string    `gorm:"primaryKey;size:36"`
	ActorID      string    `gorm:"primaryKey;size:36;index:idx_rollup_actor,priority:1"`
	Status       string    `gorm:"primaryKey;size:32"`
	ErrorCode    string    `gorm:"primaryKey;size:64"`
	N            int64     `gorm:"not null;default:0"`
	ExampleID    string    `gorm:"size:36;not null;default:''"`
	Histogram    `gorm:"embedded"`
}

// Grains of ExecutionTotal's buckets.
const (
	GrainDay = "day"
	// GrainHour names the hourly totals schema version 4 kept beside the
	// daily ones; version 5 keeps none and deletes them on upgrade
	// (execstore.DropHourTotals).
	GrainHour = "hour"
)

// ExecutionTotal is ExecutionRollup without the actor, in day buckets
// (Grain GrainDay; Start is the day's first instant, UTC): what a reader
// who may see every execution reads. Actors multiply the per-actor
// rollup's rows almost to the executions' own number; without them a
// day of one action holds a few rows, one per status and error code. A
// window reads whole days from these rows and the hours before its first
// midnight from the per-actor rollup, summed over the actors. execstore
// keeps them beside the per-actor rollup, in the same transaction
// (execstore/rollup.go). Grain stays in the key, so a finer or coarser
// grain can be added without a new table.
type ExecutionTotal struct {
	Grain        string    `gorm:"primaryKey;size:4"`
	Start        time.Time `gorm:"primaryKey;autoIncrement:false"`
	ActionTypeID string    `gorm:"primaryKey;size:36"`
	Status       string    `gorm:"primaryKey;size:32"`
	ErrorCode    string    `gorm:"primaryKey;size:64"`
	N            int64     `gorm:"not null;default:0"`
	ExampleID    string    `gorm:"size:36;not null;default:''"`
	Histogram    `gorm:"embedded"`
}

// Histogram counts a bucket's finished executions (those with a finished
// time) by the bin of their duration, created to finished (DurationBin):
// H00 is bin 0, H39 bin Bins-1. A bin no execution fell in is NULL,
// which costs a bit of the row's null bitmap rather than a column's
// bytes: most buckets hold one or two bins, and queued or running ones
// none.
type Histogram struct {
	H00 *int64 `gorm:"column:h00" json:"-"`
	H01 *int64 `gorm:"column:h01" json:"-"`
	H02 *int64 `gorm:"column:h02" json:"-"`
	H03 *int64 `gorm:"column:h03" json:"-"`
	H04 *int64 `gorm:"column:h04" json:"-"`
	H05 *int64 `gorm:"column:h05" json:"-"`
	H06 *int64 `gorm:"column:h06" json:"-"`
	H07 *int64 `gorm:"column:h07" json:"-"`
	H08 *int64 `gorm:"column:h08" json:"-"`
	H09 *int64 `gorm:"column:h09" json:"-"`
	H10 *int64 `gorm:"column:h10" json:"-"`
	H11 *int64 `gorm:"column:h11" json:"-"`
	H12 *int64 `gorm:"column:h12" json:"-"`
	H13 *int64 `gorm:"column:h13" json:"-"`
	H14 *int64 `gorm:"column:h14" json:"-"`
	H15 *int64 `gorm:"column:h15" json:"-"`
	H16 *int64 `gorm:"column:h16" json:"-"`
	H17 *int64 `gorm:"column:h17" json:"-"`
	H18 *int64 `gorm:"column:h18" json:"-"`
	H19 *int64 `gorm:"column:h19" json:"-"`
	H20 *int64 `gorm:"column:h20" json:"-"`
	H21 *int64 `gorm:"column:h21" json:"-"`
	H22 *int64 `gorm:"column:h22" json:"-"`
	H23 *int64 `gorm:"column:h23" json:"-"`
	H24 *int64 `gorm:"column:h24" json:"-"`
	H25 *int64 `gorm:"column:h25" json:"-"`
	H26 *int64 `gorm:"column:h26" json:"-"`
	H27 *int64 `gorm:"column:h27" json:"-"`
	H28 *int64 `gorm:"column:h28" json:"-"`
	H29 *int64 `gorm:"column:h29" json:"-"`
	H30 *int64 `gorm:"column:h30" json:"-"`
	H31 *int64 `gorm:"column:h31" json:"-"`
	H32 *int64 `gorm:"column:h32" json:"-"`
	H33 *int64 `gorm:"column:h33" json:"-"`
	H34 *int64 `gorm:"column:h34" json:"-"`
	H35 *int64 `gorm:"column:h35" json:"-"`
	H36 *int64 `gorm:"column:h36" json:"-"`
	H37 *int64 `gorm:"column:h37" json:"-"`
	H38 *int64 `gorm:"column:h38" json:"-"`
	H39 *int64 `gorm:"column:h39" json:"-"`
}

// Bins is the number of a Histogram's bins.
const Bins = 40

// binRatio is the ratio of a bin's upper edge to its lower: bins are
// log-scale, so the relative error of a duration read from its bin is the
// same at 2 ms as at 20 min.
const binRatio = 1.5

// binEdges[k] is the upper edge of bin k+1 in microseconds:
// 1 ms × 1.5^k, from 1 ms (bin 0 is under 1 ms) to about 83 min (the last
// bin is everything above). Integers, so a duration's bin is the same
// however it is computed.
var binEdges = func() (e [Bins - 1]int64) {
	for k := range e {
		e[k] = int64(math.Round(1000 * math.Pow(binRatio, float64(k))))
	}
	return e
}()

// DurationBin is the histogram bin of an execution created at created and
// finished at finished. Both times are taken to the microsecond, what
// Postgres stores, so a bin computed when a row is written equals one
// computed from the row read back.
func DurationBin(created, finished time.Time) int {
	us := finished.Truncate(time.Microsecond).Sub(created.Truncate(time.Microsecond)).Microseconds()
	lo, hi := 0, len(binEdges) // the first edge above us
	for lo < hi {
		m := (lo + hi) / 2
		if binEdges[m] > us {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// BinBounds are bin i's durations, [lo, hi); hi is 0 for the last bin,
// which has no upper edge.
func BinBounds(i int) (lo, hi time.Duration) {
	if i > 0 {
		lo = time.Duration(binEdges[i-1]) * time.Microsecond
	}
	if i < len(binEdges) {
		hi = time.Duration(binEdges[i]) * time.Microsecond
	}
	return lo, hi
}

// BinValue is the duration a bin stands for: the geometric middle of its
// edges, so the true duration of any execution in it is within a factor
// of √1.5 ≈ 1.22 of it (half the lowest bin's edge for bin 0, the last
// bin's lower edge for it).
func BinValue(i int) time.Duration {
	lo, hi := BinBounds(i)
	switch {
	case i == 0:
		return hi / 2
	case hi == 0:
		return lo
	}
	return time.Duration(math.Sqrt(float64(lo) * float64(hi)))
}

// Counts are h's bins as counts (NULL is 0).
func (h *Histogram) Counts() (c [Bins]int64) {
	for i, p := range h.bins() {
		if *p != nil {
			c[i] = **p
		}
	}
	return c
}

func (h *Histogram) bins() [Bins]**int64 {
	return [Bins]**int64{&h.H00, &h.H01, &h.H02, &h.H03, &h.H04, &h.H05, &h.H06, &h.H07, &h.H08, &h.H09, &h.H10, &h.H11, &h.H12, &h.H13, &h.H14, &h.H15, &h.H16, &h.H17, &h.H18, &h.H19, &h.H20, &h.H21, &h.H22, &h.H23, &h.H24, &h.H25, &h.H26, &h.H27, &h.H28, &h.H29, &h.H30, &h.H31, &h.H32, &h.H33, &h.H34, &h.H35, &h.H36, &h.H37, &h.H38, &h.H39}
}

// HistogramOf is a histogram of one duration in bin i.
func HistogramOf(i int) Histogram {
	var h Histogram
	one := int64(1)
	*h.bins()[i] = &one
	return h
}

// HistogramColumn is the column of bin i.
func HistogramColumn(i int) string { return fmt.Sprintf("h%02d", i) }

// DataMigration records a one-time data migration (by name) as done, so
// a start runs it once however many replicas start, or, for one that
// works in chunks, how far it got: Cursor is where the next chunk starts
// ("" once done; the rows of migrations run whole have none).
type DataMigration struct {
	Name   string `gorm:"primaryKey;size:64"`
	DoneAt time.Time
	Cursor string `gorm:"size:64;not null;default:''"`
}

// CursorStart is a chunked data migration's cursor before its first chunk.
const CursorStart = "start"
