// Package telemetry holds what every process shares to be watched: bounded
// metric label values, the Temporal SDK's metrics on the process's
// Prometheus registry, and the listener that serves /metrics for a process
// without an HTTP server of its own (the worker).
package telemetry

import (
	"strconv"
	"sync"
)

// Other is the label value that stands for every value beyond a
// CappedLabel's cap.
const Other = "other"

// CappedLabel keeps a label's values bounded: the first Cap distinct values
// it is asked about keep their names, every later one is Other. Values such
// as action type names are chosen by users; without a cap each new one
// would add series to /metrics for the life of the process.
type CappedLabel struct {
	Cap  int
	mu   sync.Mutex
	seen map[string]struct{}
}

// NewCappedLabel returns a CappedLabel keeping n values.
func NewCappedLabel(n int) *CappedLabel { return &CappedLabel{Cap: n} }

// Value is v, or Other once Cap other values have been seen.
func (c *CappedLabel) Value(v string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[v]; ok {
		return v
	}
	if len(c.seen) >= c.Cap {
		return Other
	}
	if c.seen == nil {
		c.seen = map[string]struct{}{}
	}
	c.seen[v] = struct{}{}
	return v
}

// StatusClass is an HTTP status's class ("2xx" ... "5xx"); anything out of
// range is "other".
func StatusClass(code int) string {
	if code < 100 || code > 599 {
		return Other
	}
	return strconv.Itoa(code/100) + "xx"
}
