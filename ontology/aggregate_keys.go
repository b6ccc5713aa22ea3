package ontology

import (
	"encoding/binary"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/domain"
)

// Aggregations read values back from the index's keys (models.ObjectValue),
// never from the objects' JSON: these decode the key classes that can be
// decoded (numbers, instants, strings, booleans; arrays and objects are
// hashes and cannot).

// keyDigits decodes a number key (domain.decimalKey) into its sign, its
// significant digits d1…dn and exponent E of 0.d1…dn × 10^E.
func keyDigits(k []byte) (neg bool, digits string, exp int, ok bool) {
	if len(k) < 2 || k[0] != domain.KeyNumber {
		return false, "", 0, false
	}
	switch k[1] {
	case 0x80:
		return false, "", 0, true
	case 0x81:
		if len(k) < 5 {
			return false, "", 0, false
		}
		return false, string(k[4:]), int(binary.BigEndian.Uint16(k[2:4])) - 0x8000, true
	case 0x7f:
		if len(k) < 6 || k[len(k)-1] != 0xff {
			return false, "", 0, false
		}
		var sb strings.Builder
		for _, c := range k[4 : len(k)-1] {
			sb.WriteByte('9' - c + '0')
		}
		return true, sb.String(), int(^binary.BigEndian.Uint16(k[2:4])) - 0x8000, true
	}
	return false, "", 0, false
}

// keyRat is the exact value of a number key.
func keyRat(k []byte) (*big.Rat, bool) {
	neg, d, e, ok := keyDigits(k)
	if !ok {
		return nil, false
	}
	if d == "" {
		return new(big.Rat), true
	}
	s := "0." + d + "e" + strconv.Itoa(e)
	if neg {
		s = "-" + s
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// keyNumber is a number key as a JSON number in its shortest exact
// decimal form (1 and 1.0 are one key: 1).
func keyNumber(k []byte) (json.Number, bool) {
	neg, d, e, ok := keyDigits(k)
	if !ok {
		return "", false
	}
	if d == "" {
		return "0", true
	}
	var s string
	switch {
	case e >= len(d) && e <= 21:
		s = d + strings.Repeat("0", e-len(d))
	case e > 0 && e < len(d):
		s = d[:e] + "." + d[e:]
	case e <= 0 && e > -6:
		s = "0." + strings.Repeat("0", -e) + d
	default:
		s = d[:1]
		if len(d) > 1 {
			s += "." + d[1:]
		}
		s += "e" + strconv.Itoa(e-1)
	}
	if neg {
		s = "-" + s
	}
	return json.Number(s), true
}

// keyInstant decodes an instant key (domain.InstantKey).
func keyInstant(k []byte) (time.Time, bool) {
	if len(k) != 13 || k[0] != domain.KeyInstant {
		return time.Time{}, false
	}
	sec := int64(binary.BigEndian.Uint64(k[1:9]) ^ (1 << 63))
	return time.Unix(sec, int64(binary.BigEndian.Uint32(k[9:]))).UTC(), true
}

// instantText renders an instant as a value of base (a date or a
// timestamp; other strings holding an instant as a timestamp).
func instantText(t time.Time, base string) string {
	if base == domain.TypeDate {
		return t.Format(time.DateOnly)
	}
	return t.Format(time.RFC3339Nano)
}

// keyValue is the value a key (and, when cut, its full text) stands for,
// as a group's key shows it; false for keys that are hashes or equal to
// nothing.
func keyValue(k, full []byte, base string) (any, bool) {
	if len(k) == 0 {
		return nil, false
	}
	switch k[0] {
	case domain.KeyNumber:
		return keyNumber(k)
	case domain.KeyInstant:
		t, ok := keyInstant(k)
		return instantText(t, base), ok
	case domain.KeyString:
		if full != nil {
			return string(full), true
		}
		return string(k[1:]), true
	case domain.KeyBool:
		return len(k) == 2 && k[1] == 1, len(k) == 2
	}
	return nil, false
}
