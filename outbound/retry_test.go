package outbound_test

import (
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/outbound"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"5":                             5 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"999999999":                     24 * time.Hour,
		"Mon, 23 Nov 2026 12:01:00 GMT": time.Minute,
		"Mon, 23 Nov 2026 11:00:00 GMT": 0,
	} {
		if got := outbound.ParseRetryAfter(in, now); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

func TestRetryableStatus(t *testing.T) {
	for code, want := range map[int]bool{200: false, 301: false, 302: false, 400: false, 401: false, 404: false, 408: true, 410: false, 422: false, 429: true, 500: true, 502: true, 503: true, 504: true} {
		if outbound.RetryableStatus(code) != want {
			t.Errorf("%d: %v", code, !want)
		}
	}
}
