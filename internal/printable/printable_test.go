package printable

import "testing"

func TestString(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "plain": true, "é 😀 #%?": true,
		"a\x00b": false, "tab\there": false, "del\x7f": false, "\xff": false, "\xc0\x80": false,
	} {
		if got := String(s); got != want {
			t.Errorf("String(%q) = %v, want %v", s, got, want)
		}
	}
}
