package ontology

import (
	"fmt"
	"math"
	"testing"

	"github.com/ontoflow/ontoflow/defaults"
)

// approximate_distinct counts exactly up to the limit, then in a sketch
// whose estimate stays within its error bound; exact_distinct, and
// approximate_distinct when the request wants accuracy, never estimate.
// Merging (max_groups' other bucket) keeps the count whatever each side
// holds.
func TestApproximateDistinctWithinItsBound(t *testing.T) {
	approx := metricSpec{kind: MetricApproximateDistinct}
	exact := metricSpec{kind: MetricExactDistinct}
	const n = 200000
	fill := func(st *metricState, from, to int) {
		for i := from; i < to; i++ {
			st.add([]byte(fmt.Sprintf("\x05key-%d", i)), nil, 1)
		}
	}
	check := func(name string, st *metricState, want int64, wantEst bool) {
		t.Helper()
		got, est := st.distinctCount()
		if est != wantEst {
			t.Fatalf("%s: estimated %v, want %v", name, est, wantEst)
		}
		// 2^14 registers: a standard error of 1.04/128 ≈ 0.81%; 4 of
		// them is the bound (a failure is a broken sketch, not bad luck).
		if err := math.Abs(float64(got-want)) / float64(want); (!est && got != want) || err > 4*0.0081 {
			t.Fatalf("%s: %d distinct, want %d (error %.2f%%)", name, got, want, 100*err)
		}
	}

	st := newMetricState(approx, true)
	fill(st, 0, defaults.ExactDistinctUpTo)
	check("approximate at the limit", st, defaults.ExactDistinctUpTo, false)
	fill(st, defaults.ExactDistinctUpTo, n)
	check("approximate past the limit", st, n, true)
	fill(st, 0, n) // the same values again change nothing
	check("approximate, values repeated", st, n, true)

	for name, st := range map[string]*metricState{"exact": newMetricState(exact, true), "approximate, accuracy asked": newMetricState(approx, false)} {
		fill(st, 0, 3*defaults.ExactDistinctUpTo)
		check(name, st, 3*defaults.ExactDistinctUpTo, false)
	}

	// other bucket: a sketch merged with a set, and two overlapping sketches.
	a, b, c := newMetricState(approx, true), newMetricState(approx, true), newMetricState(approx, true)
	fill(a, 0, 100000)
	fill(b, 50000, 50500)
	fill(c, 80000, 180000)
	other := newMetricState(approx, true)
	other.merge(b)
	other.merge(a)
	other.merge(c)
	check("merged", other, 180000, true)

	// Sums and the like keep no distinct values at all.
	sum := newMetricState(metricSpec{kind: MetricSum}, true)
	fill(sum, 0, 100)
	if sum.distinct != nil || sum.sketch != nil {
		t.Errorf("a sum metric keeps distinct values")
	}
}
