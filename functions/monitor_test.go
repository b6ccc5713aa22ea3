package functions

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

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

// TestMetricsVersionsAreBounded: published packages and versions keep
// their names in the metrics up to a cap; later ones are other, so
// publishing without end does not grow /metrics without end.
func TestMetricsVersionsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	for i := 0; i < maxMetricVersions+300; i++ {
		m.observe("pkg", fmt.Sprintf("1.0.%d", i), StatusSucceeded, time.Millisecond)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if n := len(mf.GetMetric()); n != maxMetricVersions+1 {
			t.Errorf("%s: %d series, want %d named and other", mf.GetName(), n, maxMetricVersions)
		}
	}
}
