package domain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// Value key classes: the first byte of a value key. Keys of one class
// compare byte-wise in the order the class's values compare in conditions
// (compareValues); keys of different classes never compare.
const (
	KeyNumber  byte = 'N' // a number: an order-preserving exact decimal
	KeyInstant byte = 'T' // a string that is a date or timestamp: its instant
	KeyString  byte = 'S' // any other string: its bytes
	// KeyInstantText is the bytes of a string that is a date or
	// timestamp, for byte-wise comparisons of it with a plain string.
	KeyInstantText byte = 'U'
	KeyBool        byte = 'B'
	KeyArray       byte = 'A' // an array: SHA-256 of its canonical form
	KeyObject      byte = 'O' // a JSON object: SHA-256 of its canonical form
)

// EqualityKey is the key of v such that ValuesEqual(a, b) holds exactly
// when the keys of a and b are equal (up to SHA-256 collisions of arrays
// and objects): numbers by value, dates and timestamps by instant, arrays
// and objects member by member. ok is false for a value equal to nothing
// (a number that cannot be read exactly, NaN).
func EqualityKey(v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case string:
		if t, ok := parseInstant(x); ok {
			return InstantKey(t.Unix(), t.Nanosecond()), true
		}
		return append([]byte{KeyString}, x...), true
	case bool:
		if x {
			return []byte{KeyBool, 1}, true
		}
		return []byte{KeyBool, 0}, true
	case map[string]any:
		c, ok := canonical(nil, x, 0)
		if !ok {
			return nil, false
		}
		sum := sha256.Sum256(c)
		return append([]byte{KeyObject}, sum[:]...), true
	}
	if IsNumber(v) {
		return NumberKey(v)
	}
	if items, ok := asSlice(v); ok {
		c, ok := canonical(nil, items, 0)
		if !ok {
			return nil, false
		}
		sum := sha256.Sum256(c)
		return append([]byte{KeyArray}, sum[:]...), true
	}
	return nil, false
}

// IsInstant reports whether s is a date or a timestamp (compared as
// instants by conditions).
func IsInstant(s string) bool {
	_, ok := parseInstant(s)
	return ok
}

// canonical appends v's canonical form to b: equal (ValuesEqual) values
// have equal forms.
func canonical(b []byte, v any, depth int) ([]byte, bool) {
	if depth > 64 {
		return nil, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, 'Z'), true
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, KeyObject)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			var ok bool
			if b, ok = canonical(b, x[k], depth+1); !ok {
				return nil, false
			}
		}
		return b, true
	case string, bool:
		k, _ := EqualityKey(x)
		b = binary.AppendUvarint(b, uint64(len(k)))
		return append(b, k...), true
	}
	if IsNumber(v) {
		k, ok := NumberKey(v)
		if !ok {
			return nil, false
		}
		b = binary.AppendUvarint(b, uint64(len(k)))
		return append(b, k...), true
	}
	items, ok := asSlice(v)
	if !ok {
		return nil, false
	}
	b = append(b, KeyArray)
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, it := range items {
		if b, ok = canonical(b, it, depth+1); !ok {
			return nil, false
		}
	}
	return b, true
}

// InstantKey is the key of an instant (Unix seconds and nanoseconds):
// chronological order is byte order.
func InstantKey(sec int64, nsec int) []byte {
	b := make([]byte, 13)
	b[0] = KeyInstant
	binary.BigEndian.PutUint64(b[1:], uint64(sec)^(1<<63))
	binary.BigEndian.PutUint32(b[9:], uint32(nsec))
	return b
}

// InstantOf is the key of s when s is a date or timestamp.
func InstantOf(s string) ([]byte, bool) {
	t, ok := parseInstant(s)
	if !ok {
		return nil, false
	}
	return InstantKey(t.Unix(), t.Nanosecond()), true
}

// NumberKey is the key of a number: numeric order (exact, as conditions
// compare numbers) is byte order. A float64 is taken at its shortest
// decimal form, the form JSON stores it in. ok is false for what
// conditions cannot compare exactly.
func NumberKey(v any) ([]byte, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(x), 'g', -1, 32)
	default:
		n, ok := AsInt64(v)
		if !ok {
			if u, isU := v.(uint64); isU {
				s = strconv.FormatUint(u, 10)
				break
			}
			return nil, false
		}
		s = strconv.FormatInt(n, 10)
	}
	if _, ok := numberRat(s); !ok {
		return nil, false
	}
	return decimalKey(s), true
}

// decimalKey encodes JSON number text (already checked by numberSyntax)
// as N, a sign byte (0x7f negative, 0x80 zero, 0x81 positive), the
// decimal exponent E of 0.d1d2…dn × 10^E in two bytes, and the digits
// (complemented and terminated for negatives, so byte order is numeric
// order on both sides of zero).
func decimalKey(s string) []byte {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, _ = strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		s = s[:i]
	}
	digits := s
	if i := strings.IndexByte(s, '.'); i >= 0 {
		digits = s[:i] + s[i+1:]
		exp -= len(s) - i - 1
	}
	trimmed := strings.TrimLeft(digits, "0")
	if trimmed == "" {
		return []byte{KeyNumber, 0x80}
	}
	n := len(trimmed)
	end := strings.TrimRight(trimmed, "0")
	exp += n - len(end) // value = end × 10^exp
	e := exp + len(end) // value = 0.end × 10^e
	ek := uint16(e + 0x8000)
	out := make([]byte, 0, 4+len(end)+1)
	if !neg {
		out = append(out, KeyNumber, 0x81, byte(ek>>8), byte(ek))
		return append(out, end...)
	}
	ek = ^ek
	out = append(out, KeyNumber, 0x7f, byte(ek>>8), byte(ek))
	for i := 0; i < len(end); i++ {
		out = append(out, '9'-end[i]+'0')
	}
	return append(out, 0xff)
}
