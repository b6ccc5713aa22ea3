package functions

import "testing"

// TestPercentile: nearest rank, so p95 of a few runs is the slow one.
func TestPercentile(t *testing.T) {
	for _, c := range []struct {
		ds       []int64
		p50, p95 int64
	}{
		{[]int64{7}, 7, 7},
		{[]int64{1, 300}, 1, 300},
		{[]int64{1, 2, 3, 4, 300}, 3, 300},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5, 10},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 10, 19},
	} {
		if p50, p95 := percentile(c.ds, 50), percentile(c.ds, 95); p50 != c.p50 || p95 != c.p95 {
			t.Errorf("%v: p50 %d p95 %d, want %d %d", c.ds, p50, p95, c.p50, c.p95)
		}
	}
}
