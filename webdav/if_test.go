package webdav

import (
	"reflect"
	"testing"
)

// TestParseIf covers RFC 4918 §10.4's forms, which the parser's split
// into parseIfCondition must keep.
func TestParseIf(t *testing.T) {
	good := map[string][]ifList{
		`(<opaquelocktoken:a>)`:      {{Conds: []ifCondition{{Token: "opaquelocktoken:a"}}}},
		`(Not <DAV:no-lock> ["e1"])`: {{Conds: []ifCondition{{Not: true, Token: "DAV:no-lock"}, {ETag: `"e1"`}}}},
		"(<t1>)\t(NOT\n[W/\"x\"])":   {{Conds: []ifCondition{{Token: "t1"}}}, {Conds: []ifCondition{{Not: true, ETag: `W/"x"`}}}},
		`<http://h/webdav/a> (<t1>) (<t2>) </webdav/b> (not <t3>)`: {
			{Tag: "http://h/webdav/a", Conds: []ifCondition{{Token: "t1"}}},
			{Tag: "http://h/webdav/a", Conds: []ifCondition{{Token: "t2"}}},
			{Tag: "/webdav/b", Conds: []ifCondition{{Not: true, Token: "t3"}}},
		},
	}
	for in, want := range good {
		got, err := parseIf(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseIf(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{
		``, `()`, `(<>)`, `([])`, `(Not)`, `(<t1>`, `(<t1)`, `(["e)`, `(x)`,
		`<http://h/a>`, `<http://h/a> x`, `(<t1>) <http://h/a> (<t2>)`, `<http://h/a (<t>)`,
	} {
		if got, err := parseIf(in); err == nil {
			t.Errorf("parseIf(%q) = %+v, want an error", in, got)
		}
	}
}
