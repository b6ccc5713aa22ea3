package console

import (
	"fmt"
	"html/template"
	"net/url"
	"strings"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/media"
)

// Media references to WebDAV files on the console's pages: a property or
// a pinned parameter that names a file of a WebDAV tree links to it. The
// link is the plain WebDAV URL: opening it asks the browser for the
// reader's own credentials (WebDAV takes Basic only); no token is put in
// it.

// mediaLink is the link to the WebDAV file a media_reference value names
// ("" when it names none): its relative /webdav/... path.
func mediaLink(t domain.PropertyType, v any) string {
	if t.Base != domain.TypeMediaReference {
		return ""
	}
	return fileHref(v)
}

// fileLink is one element of an array of media references on an object's
// page: its text, and the link to its WebDAV file when it names one.
type fileLink struct{ Text, Href string }

// mediaLinks are the elements of an array of media references, each
// linked to the WebDAV file it names (nil for any other type).
func mediaLinks(t domain.PropertyType, v any) []fileLink {
	if t.Base != domain.TypeArray || t.ElementType == nil || t.ElementType.Base != domain.TypeMediaReference {
		return nil
	}
	xs, _ := v.([]any)
	out := make([]fileLink, 0, len(xs))
	for _, x := range xs {
		out = append(out, fileLink{Text: valueText(x), Href: fileHref(x)})
	}
	return out
}

// fileHref is the /webdav/... path of a reference value (a string, or an
// object with uri/url, pinned or not); "" for any other URL.
func fileHref(v any) string {
	raw := ""
	switch x := v.(type) {
	case string:
		raw = x
	case map[string]any:
		if p, ok := x["path"].(string); ok && x["sha256"] != nil {
			return escapedTreePath(p)
		}
		raw, _ = x["uri"].(string)
		if raw == "" {
			raw, _ = x["url"].(string)
		}
	}
	p, ok := media.ReferencePath(raw, nil)
	if !ok || p == "" {
		return ""
	}
	return escapedTreePath(p)
}

func escapedTreePath(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return media.ReferencePrefix + "/" + strings.Join(segs, "/")
}

// pinnedFile renders a parameter's value on the execution page: a pinned
// file as a link with its name, size and checksum (the version the
// execution used), an array holding pinned files as a list of them,
// anything else as valueText.
func pinnedFile(v any) template.HTML {
	if xs, ok := v.([]any); ok && holdsPin(xs) {
		var b strings.Builder
		b.WriteString(`<ul class="pinned-files">`)
		for _, x := range xs {
			b.WriteString("<li>" + string(pinnedFile(x)) + "</li>")
		}
		return template.HTML(b.String() + "</ul>")
	}
	m, ok := v.(map[string]any)
	if !ok || m["sha256"] == nil {
		return template.HTML(template.HTMLEscapeString(valueText(v)))
	}
	name, _ := m["name"].(string)
	sha, _ := m["sha256"].(string)
	modified, _ := m["modified"].(string)
	return template.HTML(fmt.Sprintf(`<a class="pinned-file" href="%s">%s</a> <span class="muted">%s bytes · SHA-256 <code>%s</code> · modified %s · ETag <code>%s</code> (the version this execution used)</span>`,
		template.HTMLEscapeString(fileHref(m)), template.HTMLEscapeString(name), template.HTMLEscapeString(valueText(m["size"])),
		template.HTMLEscapeString(sha), template.HTMLEscapeString(modified), template.HTMLEscapeString(valueText(m["etag"]))))
}

// holdsPin reports whether an array parameter holds a pinned file (arrays
// of media references are pinned element by element).
func holdsPin(xs []any) bool {
	for _, x := range xs {
		if m, ok := x.(map[string]any); ok && m["sha256"] != nil {
			return true
		}
		if inner, ok := x.([]any); ok && holdsPin(inner) {
			return true
		}
	}
	return false
}
