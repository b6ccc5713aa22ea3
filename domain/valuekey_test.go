package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
)

// randNumber is JSON number text of varied shapes: integers, decimals,
// exponents, negative, zero with fractions.
func randNumber(r *rand.Rand) json.Number {
	switch r.Intn(5) {
	case 0:
		return json.Number(fmt.Sprint(r.Int63n(2000) - 1000))
	case 1:
		return json.Number(fmt.Sprintf("%d.%03d", r.Intn(20)-10, r.Intn(1000)))
	case 2:
		return json.Number(fmt.Sprintf("%de%d", r.Intn(200)-100, r.Intn(10)-5))
	case 3:
		b, _ := json.Marshal(r.NormFloat64() * 1e6)
		return json.Number(b)
	}
	return json.Number(fmt.Sprintf("%d.%d0E+%d", r.Intn(9), r.Intn(100), r.Intn(3)))
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestNumberKeyOrdersAsConditions(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		a, b := randNumber(r), randNumber(r)
		if i%7 == 0 {
			b = a
		}
		ka, okA := NumberKey(a)
		kb, okB := NumberKey(b)
		if !okA || !okB {
			t.Fatalf("no key for %s or %s", a, b)
		}
		want, _ := compareValues(a, b, nil)
		if got := sign(bytes.Compare(ka, kb)); got != want {
			t.Fatalf("%s vs %s: keys compare %d, values %d", a, b, got, want)
		}
	}
}

func TestInstantAndEqualityKeys(t *testing.T) {
	vals := []any{"2024-01-01", "2024-01-01T00:00:00Z", "2024-01-01T01:00:00+01:00", "2023-12-31T23:59:59.999999999Z",
		"abc", "", "2024-1-1", json.Number("1"), json.Number("1.0"), json.Number("10e-1"), int64(2), true, false,
		[]any{json.Number("1"), "2024-01-01"}, []any{json.Number("1.00"), "2024-01-01T00:00:00Z"}, []any{},
		map[string]any{"a": json.Number("1")}, map[string]any{"a": json.Number("1e0")}, map[string]any{"b": json.Number("1")}}
	for _, a := range vals {
		for _, b := range vals {
			ka, _ := EqualityKey(a)
			kb, _ := EqualityKey(b)
			if got, want := bytes.Equal(ka, kb), ValuesEqual(a, b); got != want {
				t.Errorf("%v vs %v: keys equal %v, values equal %v", a, b, got, want)
			}
			ia, okA := InstantOf(fmt.Sprint(a))
			ib, okB := InstantOf(fmt.Sprint(b))
			if okA && okB {
				want, _ := compareValues(a, b, []string{"x"})
				if got := sign(bytes.Compare(ia, ib)); got != want {
					t.Errorf("%v vs %v: instant keys compare %d, values %d", a, b, got, want)
				}
			}
		}
	}
}
