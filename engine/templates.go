package engine

// RenderTemplate replaces {{ path }} in s with the value at path in scope,
// as notifications render their templates (a path that names nothing
// renders empty); kinds that render templates (a webhook's url, headers
// and body) use it so both read the same way.
func RenderTemplate(s string, scope map[string]any) string { return render(s, scope) }

// EachPlaceholder replaces each {{ path }} of s with what repl answers for
// its text m and path.
func EachPlaceholder(s string, repl func(m, path string) string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		return repl(m, placeholder.FindStringSubmatch(m)[1])
	})
}
