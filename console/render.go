package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// pageData is what every full page shows around its content.
type pageData struct {
	Title    string
	User     string
	CSRF     string
	Unread   int64
	Error    string
	Username string // the sign-in form's, kept after a failure
	Content  any
}

var funcs = template.FuncMap{
	"json":     jsonText,
	"value":    valueText,
	"pinned":   pinnedFile,
	"time":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"timep":    timePtr,
	"keys":     sortedKeys,
	"add":      func(a, b int) int { return a + b },
	"lookup":   func(m map[string]any, k string) any { return m[k] },
	"hasKey":   func(m map[string]any, k string) bool { _, ok := m[k]; return ok },
	"prefix":   func() string { return Prefix },
	"num":      func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
	"editRows": editRows,
	"opName":   func(op string) string { return opNames[op] },
	"objectRef": func(n rowNames, id string) ontology.ObjectRef {
		if ref, ok := n.Objects[id]; ok {
			return ref
		}
		return ontology.ObjectRef{ID: id}
	},
}

// jsonText renders v as indented JSON (as text: the template escapes it).
// html/template escapes the text; json's own HTML escaping would show
// "<" as \u003c.
func jsonText(v any) string {
	return marshalText(v, "  ")
}

func marshalText(v any, indent string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// valueText renders a property value compactly: strings as they are,
// anything else as JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return marshalText(v, "")
}

func timePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// editRow is one line of an edits table: one property an edit changed,
// or one link edit, with its object named by title.
type editRow struct {
	Op, ObjectTypeID, ObjectID, Title string
	Property                          string
	Before, After                     cell
	Link                              string
}

// editRows lists what edits changed, as Preview does: a property an
// update wrote with the value it already had is left out (the record keeps
// it; nothing changed, so nothing is shown).
func editRows(edits []models.Edit, names rowNames) []editRow {
	var rows []editRow
	for _, e := range edits {
		base := editRow{Op: e.Op, ObjectTypeID: e.ObjectTypeID, ObjectID: e.ObjectID, Title: e.ObjectID}
		if ref, ok := names.Objects[e.ObjectID]; ok {
			base.Title = ref.Title
		}
		keys := editKeys(e)
		if len(keys) == 0 {
			base.Link = e.LinkID
			rows = append(rows, base)
			continue
		}
		for _, k := range keys {
			r := base
			r.Property = k
			r.Before, r.After = names.Value(e.ObjectTypeID, k, e.Before[k]), names.Value(e.ObjectTypeID, k, e.After[k])
			rows = append(rows, r)
		}
	}
	return rows
}

// editKeys are the properties an edit touched, before or after, less
// those an update left as they were.
func editKeys(e models.Edit) []string {
	seen := map[string]any{}
	for k := range e.Before {
		seen[k] = nil
	}
	for k := range e.After {
		seen[k] = nil
	}
	if e.Op == models.EditUpdateObject {
		for k := range seen {
			if domain.ValuesEqual(e.Before[k], e.After[k]) {
				delete(seen, k)
			}
		}
	}
	return sortedKeys(seen)
}

// page renders a full page with the signed-in chrome.
func (c *Console) page(g *gin.Context, status int, name, title string, content any) {
	pd := pageData{Title: title, CSRF: g.GetString(csrfKey), Content: content}
	if p := principal(g); p != nil {
		pd.User = p.User.Username
		pd.Unread = c.unread(g, p.User.ID)
	}
	c.render(g, status, name, pd)
}

func (c *Console) render(g *gin.Context, status int, name string, data any) {
	var buf bytes.Buffer
	if err := c.tpl.ExecuteTemplate(&buf, name, data); err != nil {
		c.d.Logger.ErrorContext(g.Request.Context(), "render console template", "template", name, "err", err)
		g.String(http.StatusInternalServerError, "internal error")
		return
	}
	g.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// fragment renders a template without the page around it (htmx swaps).
// htmx swaps only 2xx answers, so a refusal is rendered with 200 too.
func (c *Console) fragment(g *gin.Context, name string, data any) {
	c.render(g, http.StatusOK, name, data)
}

func (c *Console) errorPage(g *gin.Context, status int, msg string) {
	if g.GetHeader("HX-Request") == "true" {
		c.render(g, status, "message", msg)
		return
	}
	c.page(g, status, "error", "Error", msg)
}

// unread counts the caller's unread notifications for the header.
func (c *Console) unread(g *gin.Context, userID string) int64 {
	n, err := c.d.Inbox.Unread(g.Request.Context(), userID)
	if err != nil {
		c.d.Logger.WarnContext(g.Request.Context(), "count unread notifications", "err", err)
	}
	return n
}
