package auth

import "fmt"

// Levels is the ordered list of classification levels, lowest first
// (default public < confidential < pii). The same list names object markings
// and user clearances, so "clearance dominates marking" is a rank compare.
type Levels []string

// DefaultLevels is the default marking / clearance order.
var DefaultLevels = Levels{"public", "confidential", "pii"}

// Rank is the position of l, or -1 if l is not a configured level.
func (ls Levels) Rank(l string) int {
	for i, x := range ls {
		if x == l {
			return i
		}
	}
	return -1
}

// Valid reports whether l is a configured level.
func (ls Levels) Valid(l string) bool { return ls.Rank(l) >= 0 }

// Dominates reports whether clearance is at least marking.
func (ls Levels) Dominates(clearance, marking string) bool {
	c, m := ls.Rank(clearance), ls.Rank(marking)
	return c >= 0 && m >= 0 && c >= m
}

// Check returns an error naming the allowed levels when l is not one.
func (ls Levels) Check(field, l string) error {
	if !ls.Valid(l) {
		return fmt.Errorf("%s: %q is not a known level (expected one of %v)", field, l, []string(ls))
	}
	return nil
}

// Lowest is the lowest level.
func (ls Levels) Lowest() string { return ls[0] }
