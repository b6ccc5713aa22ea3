// Package printable tells whether a string is text that every store and
// format Ontoflow writes can carry: valid UTF-8 without control characters.
// Postgres refuses invalid UTF-8 and NUL, and XML 1.0 cannot hold control
// characters at all, so such values are refused where they come in.
package printable

import "unicode/utf8"

// String reports whether s is UTF-8 without control characters (U+0000 to
// U+001F and U+007F).
func String(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return utf8.ValidString(s)
}
