package webdav

import (
	"strconv"
	"testing"
)

// A per-user cache never holds more than its cap, however many users pass
// through it (issue 20), and keeps working after it is cleared.
func TestCappedMapBound(t *testing.T) {
	c := cappedMap{max: 100}
	for i := range 10_000 {
		c.Store(strconv.Itoa(i), i)
		c.Store(strconv.Itoa(i), i) // replacing is not growth
		n := 0
		c.m.Range(func(any, any) bool { n++; return true })
		if n > 100 {
			t.Fatalf("after %d users the cache holds %d entries, cap 100", i+1, n)
		}
	}
	c.Store("x", 1)
	if v, ok := c.Load("x"); !ok || v.(int) != 1 {
		t.Fatalf("Load after clears: %v %v", v, ok)
	}
	c.Delete("x")
	if _, ok := c.Load("x"); ok {
		t.Fatal("Delete kept the entry")
	}
}
