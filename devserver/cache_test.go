package devserver

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/metrics/metricstest"
)

// TestCacheBoundsReachServer: the cache bounds of the embedded server are
// the ones the running server set up, read back from it (the cache_size
// gauge each cache records when it is created) and from the dynamic
// config it was built with. It fails if the settings are lost or renamed
// by an upgrade of go.temporal.io/server, which would bring back the
// history cache's default of 128,000 workflows (issue 20).
func TestCacheBoundsReachServer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		size, want int
	}{
		{"default", 0, DefaultHistoryCacheSize},
		{"operator's option", 5000, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := metricstest.NewCaptureHandler()
			capture := h.StartCapture()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := Start(ctx, Config{Ephemeral: true, UIPort: -1, HistoryCacheSize: tc.size,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), metricsHandler: h})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()

			// The running server's caches.
			sizes := map[string][]float64{}
			for _, r := range capture.Snapshot()[metrics.CacheSize.Name()] {
				sizes[r.Tags[metrics.CacheTypeTagName]] = append(sizes[r.Tags[metrics.CacheTypeTagName]], r.Value.(float64))
			}
			t.Logf("cache sizes the server set up, by cache_type: %v", sizes)
			ms := sizes[metrics.MutableStateCacheTypeTagValue]
			if len(ms) != 1 || ms[0] != float64(tc.want) {
				t.Errorf("history (mutable state) cache size = %v, want [%d]", ms, tc.want)
			}
			// Every other cache: the events caches in bytes, the rest in
			// entries. A cache an upgrade adds with a larger bound fails
			// here and needs a setting in defaultDynamicConfig.
			limits := map[string]float64{metrics.EventsCacheTypeTagValue: 2 << 20, metrics.MutableStateCacheTypeTagValue: float64(tc.want)}
			for typ, vs := range sizes {
				limit, ok := limits[typ]
				if !ok {
					limit = 10000
				}
				for _, v := range vs {
					if v > limit {
						t.Errorf("cache %s set up with size %v (want at most %v)", typ, v, limit)
					}
				}
			}

			// The dynamic config the server was built with, read through
			// Temporal's own settings.
			dc := dynamicconfig.NewCollection(s.dynamicConfig, log.NewNoopLogger())
			if dynamicconfig.HistoryCacheSizeBasedLimit.Get(dc)() {
				t.Error("history cache limited by bytes: the count below would be ignored")
			}
			if got := dynamicconfig.HistoryCacheHostLevelMaxSize.Get(dc)(); got != tc.want {
				t.Errorf("history.hostLevelCacheMaxSize = %d, want %d", got, tc.want)
			}
			if dynamicconfig.EnableHostLevelEventsCache.Get(dc)() {
				t.Error("host-level events cache enabled (its default is 128 MiB)")
			}
			if got := dynamicconfig.EventsCacheMaxSizeBytes.Get(dc)(); got > 512<<10 {
				t.Errorf("history.eventsCacheMaxSizeBytes = %d", got)
			}
		})
	}
}
