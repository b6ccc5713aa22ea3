package webdav

import (
	"strings"
	"testing"
)

// Text escapes what would end or start markup and the carriage return (a
// parser turns a raw one into a newline); an attribute also escapes the
// quote and the white space a parser normalizes to spaces. Every other
// byte, UTF-8 included, is written as it is.
func TestXMLEscapes(t *testing.T) {
	in := "a<b>c&d\"e'f\ng\rh\ti é/\x00"
	cases := []struct {
		name   string
		escape func(stringWriter, string)
		want   string
	}{
		{"text", escapeText, "a&lt;b&gt;c&amp;d\"e'f\ng&#xD;h\ti é/\x00"},
		{"attr", escapeAttr, "a&lt;b&gt;c&amp;d&quot;e'f&#xA;g&#xD;h&#x9;i é/\x00"},
	}
	for _, c := range cases {
		var b strings.Builder
		c.escape(&b, in)
		if b.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, b.String(), c.want)
		}
		b.Reset()
		c.escape(&b, "plain")
		if b.String() != "plain" {
			t.Errorf("%s of plain text: %q", c.name, b.String())
		}
	}
}
