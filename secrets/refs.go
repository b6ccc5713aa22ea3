package secrets

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// refPattern finds {{ secrets.X }} with any spacing; X is checked by
// ValidName afterwards so a malformed name is reported, not left as text.
var refPattern = regexp.MustCompile(`\{\{\s*secrets\.([^\s{}]*)\s*\}\}`)

// Ref is the reference text for a secret name, as configurations hold it.
func Ref(name string) string { return "{{ secrets." + name + " }}" }

// Placeholder is how a secret is shown where its value was used and must
// not be recorded (a call's URL, an error, a response excerpt): by name.
func Placeholder(name string) string { return "[secret:" + name + "]" }

// Refs lists the distinct secret names text references, in order of first
// appearance; malformed references are left out (CheckRefs reports them).
func Refs(text string) []string {
	names, _ := parseRefs(text)
	return names
}

func parseRefs(text string) (names, bad []string) {
	seen := map[string]bool{}
	for _, m := range refPattern.FindAllStringSubmatch(text, -1) {
		if !ValidName(m[1]) {
			bad = append(bad, m[0])
			continue
		}
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	return names, bad
}

// Expander resolves secret references and remembers every value it
// resolved, so whatever was built from them (a request, an error, a
// response excerpt) can be scrubbed with Redact before it is recorded or
// logged. Use one per activity attempt; it is safe for concurrent use.
//
// Expand only the configuration's own text, before or together with any
// parameter templating, never after it: a parameter value holding
// "{{ secrets.X }}" must stay text, not become a secret.
type Expander struct {
	r      Resolver
	mu     sync.Mutex
	values map[string]string // name -> value
}

// NewExpander returns an Expander resolving through r.
func NewExpander(r Resolver) *Expander { return &Expander{r: r, values: map[string]string{}} }

// Resolve returns the value of the secret name and remembers it for Redact
// (use it for values that are not in a template, e.g. a signing secret).
func (e *Expander) Resolve(ctx context.Context, name string) (string, error) {
	e.mu.Lock()
	v, ok := e.values[name]
	e.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := e.r.Resolve(ctx, name)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	e.values[name] = v
	e.mu.Unlock()
	return v, nil
}

// Expand replaces each {{ secrets.NAME }} in text with the secret's value.
// A missing secret fails it (SecretNotFound); a malformed reference is
// left as it is (definitions are checked by CheckRefs when saved).
func (e *Expander) Expand(ctx context.Context, text string) (string, error) {
	var firstErr error
	out := refPattern.ReplaceAllStringFunc(text, func(m string) string {
		name := refPattern.FindStringSubmatch(m)[1]
		if firstErr != nil || !ValidName(name) {
			return m
		}
		v, err := e.Resolve(ctx, name)
		if err != nil {
			firstErr = err
			return m
		}
		return v
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

// Redact replaces every value this Expander resolved, as it is and in its
// JSON-escaped, query-escaped and path-escaped forms, with "[secret:NAME]".
func (e *Expander) Redact(s string) string {
	e.mu.Lock()
	type form struct{ text, name string }
	var forms []form
	for name, v := range e.values {
		for _, f := range encodings(v) {
			forms = append(forms, form{f, name})
		}
	}
	e.mu.Unlock()
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i].text) > len(forms[j].text) })
	for _, f := range forms {
		if f.text != "" {
			s = strings.ReplaceAll(s, f.text, Placeholder(f.name))
		}
	}
	return s
}

// encodings are the forms in which a value may appear in a request or
// record: as is, inside a JSON string, URL-escaped, and as a path of a
// URL shows it (url.URL.String, which net/http's errors quote, keeps a
// "/" that PathEscape escapes).
func encodings(v string) []string {
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	out = append(out, url.QueryEscape(v), url.PathEscape(v), (&url.URL{Path: v}).EscapedPath())
	return out
}

// Names are the secrets this Expander resolved, sorted.
func (e *Expander) Names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.values))
	for n := range e.values {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
