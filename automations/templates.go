package automations

import (
	"strings"

	"github.com/ontoflow/ontoflow/notifications/render"
)

// fillParameters renders each parameter's template over scope, as
// notifications render theirs. A template that is one placeholder and
// nothing else passes the value itself (a number stays a number, an
// array an array), so inputs of every type can be mapped; one that names
// nothing leaves the input out, for its default to apply.
func fillParameters(templates map[string]string, scope map[string]any) map[string]any {
	out := make(map[string]any, len(templates))
	for name, tmpl := range templates {
		if path, ok := onlyPlaceholder(tmpl); ok {
			if v := lookup(scope, path); v != nil {
				out[name] = v
			}
			continue
		}
		out[name] = render.Text(tmpl, scope)
	}
	return out
}

// onlyPlaceholder returns the path of a template that is exactly one
// {{ path }}.
func onlyPlaceholder(tmpl string) (string, bool) {
	t := strings.TrimSpace(tmpl)
	loc := render.Placeholder.FindStringSubmatchIndex(t)
	if loc == nil || loc[0] != 0 || loc[1] != len(t) {
		return "", false
	}
	return t[loc[2]:loc[3]], true
}

// lookup walks path's dotted parts through nested maps (nil: nothing
// there).
func lookup(scope map[string]any, path string) any {
	var cur any = scope
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}
