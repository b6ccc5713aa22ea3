package config

import (
	"testing"

	"github.com/ontoflow/ontoflow/devserver"
)

// --temporal-cache-size defaults to the embedded server's own default, is
// read from ONTOFLOW_TEMPORAL_CACHE_SIZE and the flag, and must be positive.
func TestTemporalCacheSize(t *testing.T) {
	cfg, err := bind(t, ModeDev)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TemporalCacheSize != devserver.DefaultHistoryCacheSize {
		t.Errorf("default %d, want %d", cfg.TemporalCacheSize, devserver.DefaultHistoryCacheSize)
	}
	t.Setenv("ONTOFLOW_TEMPORAL_CACHE_SIZE", "8000")
	if cfg, err := bind(t, ModeDev); err != nil || cfg.TemporalCacheSize != 8000 {
		t.Errorf("from the environment: %v, %v", cfg, err)
	}
	if cfg, err := bind(t, ModeDev, "--temporal-cache-size", "3000"); err != nil || cfg.TemporalCacheSize != 3000 {
		t.Errorf("from the flag: %v, %v", cfg, err)
	}
	if _, err := bind(t, ModeDev, "--temporal-cache-size", "0"); err == nil {
		t.Error("a cache of 0 workflows accepted")
	}
}
