package outbound

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps the wait a Retry-After header may ask for.
const MaxRetryAfter = 24 * time.Hour

// RetryableStatus reports whether an HTTP answer is worth retrying: 408,
// 429 and 5xx. Other 4xx and every 3xx (redirects are not followed) are
// final.
func RetryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// ParseRetryAfter reads a Retry-After header, delay-seconds or an
// HTTP-date (relative to now), capped at MaxRetryAfter; 0 when absent,
// unreadable or in the past.
func ParseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return min(time.Duration(min(n, int64(MaxRetryAfter/time.Second)))*time.Second, MaxRetryAfter)
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return min(t.Sub(now), MaxRetryAfter)
	}
	return 0
}
