package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// Explorer limits: a page of objects, the columns shown when the user has
// not chosen, and how many of a type's objects a reader with a read rule
// is counted exactly up to (past it the type list says "about N", an
// estimate: counting further would read every readable row of a big
// type; a reader of everything gets the type's counter, exact at any
// size).
const (
	explorePageSize  = 50
	exploreDefCols   = 6
	exploreCountUpTo = 10000
	// exploreCellRunes is as much of a value as a cell shows (the object
	// page shows it whole): a page's size follows its rows and columns,
	// not the longest value stored.
	exploreCellRunes = 200
)

// exploreOps are the REST listing's filter operators, offered per column.
var exploreOps = []string{"is", "is_not", "includes", "greater_than", "greater_than_or_equals",
	"less_than", "less_than_or_equals", "exists", "not_exists"}

// opNames are the operators in words, as the filter row offers them (the
// URL keeps the listing's tokens).
var opNames = map[string]string{"is": "is", "is_not": "is not", "includes": "contains",
	"greater_than": "greater than", "greater_than_or_equals": "at least", "less_than": "less than",
	"less_than_or_equals": "at most", "exists": "has a value", "not_exists": "has no value"}

type typeRow struct {
	ID, Name, Description string
	// Count is the objects the user may read: "12,345", or "about
	// 330,000" (ontology.Store.CountForList).
	Count string
}

// explorePage lists the object types with how many objects of each the
// user may read.
func (c *Console) explorePage(g *gin.Context) {
	ctx, u := g.Request.Context(), principal(g).User
	ots, err := c.d.Store.ListObjectTypes(ctx, "", 0, maxListed)
	if err != nil {
		c.fail(g, err)
		return
	}
	rows := make([]typeRow, 0, len(ots))
	for _, ot := range ots {
		n, err := c.d.Store.CountForList(ctx, u, ot.ID, exploreCountUpTo)
		if err != nil {
			c.fail(g, err)
			return
		}
		rows = append(rows, typeRow{ID: ot.ID, Name: displayName(ot.DisplayName, ot.Name), Description: ot.Description,
			Count: countLabel(n)})
	}
	c.page(g, http.StatusOK, "explore", "Objects", rows)
}

// exploredType checks the explorer's bounds and reads the object type the
// path names; false: the error page has answered.
func (c *Console) exploredType(g *gin.Context) (*ontology.ObjectTypeView, bool) {
	if err := exploreBounds(g.Request.URL); err != nil {
		c.fail(g, err)
		return nil, false
	}
	ot, err := c.d.Store.ObjectType(g.Request.Context(), g.Param("type"))
	if err != nil {
		c.fail(g, err)
		return nil, false
	}
	return ot, true
}

// colFilter is one column's filter as the table's filter row shows it.
type colFilter struct {
	Property models.Property
	Label    string
	Op       string
	Value    string
}

type exploreRow struct {
	ID, Title string
	Cells     []cell
}

type exploreView struct {
	Type  *ontology.ObjectTypeView
	Title string
	All   []models.Property
	Cols  []colFilter
	Ops   []string
	Query string
	Sort  string // the listing's order_by, "" for creation order
	Rows  []exploreRow
	// Page counts the pages walked (shown, and whether "First page" is
	// offered); After is the keyset token of this page's start, Next the
	// next page's: deep pages cost what the first does.
	Page  int
	After string
	Next  string
	More  bool
	Error string
	// Matches says how many objects the filters select ("" without
	// filters, where the type's count is on the Objects page).
	Matches string
	state   url.Values
	typeRef string
	// names are the columns shown, each once, in order; shown indexes
	// them (a header asks for each property).
	names []string
	shown map[string]bool
}

// objectsTable is a type's objects as a table: the columns the user chose
// (?cols=a,b in order), a filter per column (?f.<col>=<operator>&v.<col>=),
// a search (?q=), pages of 50. Every read goes through the store's query
// path with the user's read rule; nothing is filtered here.
func (c *Console) objectsTable(g *gin.Context) {
	ctx, u := g.Request.Context(), principal(g).User
	ot, ok := c.exploredType(g)
	if !ok {
		return
	}
	v := newExploreView(ot, g.Request.URL.Query())
	var (
		objs []models.Object
		err  error
	)
	if v.Query != "" {
		objs, err = c.findObjectsUpTo(ctx, u, ot, v.Query, explorePageSize)
	} else {
		objs, err = v.readPage(ctx, c.d.Store, u, ot.ID)
	}
	status := http.StatusOK
	if err != nil {
		if !hasCode(err, apperr.InvalidArgument) {
			c.fail(g, err)
			return
		}
		status, v.Error = http.StatusBadRequest, err.Error()
	}
	refs, err := c.refTitles(ctx, u, v.colProps(), objs)
	if err != nil {
		c.fail(g, err)
		return
	}
	for _, o := range objs {
		v.Rows = append(v.Rows, v.row(o, refs))
	}
	if v.Error == "" && v.Query == "" && len(v.filters()) > 0 {
		if v.Matches, err = c.matchCount(g, u, v); err != nil {
			c.fail(g, err)
			return
		}
	}
	c.page(g, status, "explore-type", v.Title, v)
}

func newExploreView(ot *ontology.ObjectTypeView, q url.Values) *exploreView {
	v := &exploreView{Type: ot, Title: displayName(ot.DisplayName, ot.Name), All: ot.Properties, Ops: exploreOps,
		Query: strings.TrimSpace(q.Get("q")), Sort: q.Get("sort"), state: q, typeRef: ot.Name}
	v.Page, _ = pageNumber(q.Get("page"), "page") // checked by exploreBounds
	v.After = q.Get("after")
	v.shown = map[string]bool{}
	for _, name := range v.chosen() {
		i := slices.IndexFunc(ot.Properties, func(p models.Property) bool { return p.Name == name })
		if i < 0 || v.shown[name] {
			continue
		}
		p := ot.Properties[i]
		v.names, v.shown[name] = append(v.names, name), true
		v.Cols = append(v.Cols, colFilter{Property: p, Label: displayName(p.DisplayName, p.Name),
			Op: q.Get("f." + p.Name), Value: q.Get("v." + p.Name)})
	}
	return v
}

// chosen are the columns the URL names, or the first properties of the
// type.
func (v *exploreView) chosen() []string {
	if s := v.state.Get("cols"); s != "" {
		return strings.Split(s, ",")
	}
	var out []string
	for _, p := range v.All[:min(len(v.All), exploreDefCols)] {
		out = append(out, p.Name)
	}
	return out
}

// colNames are the columns shown (a copy, for a link to change).
func (v *exploreView) colNames() []string { return slices.Clone(v.names) }

// filters turns the filter row into the REST listing's filters.
func (v *exploreView) filters() []ontology.RawFilter {
	var out []ontology.RawFilter
	for _, c := range v.Cols {
		if c.Op == "" || (c.Value == "" && c.Op != "exists" && c.Op != "not_exists") {
			continue
		}
		val := c.Value
		if c.Op == "exists" || c.Op == "not_exists" {
			val = "true"
		}
		out = append(out, ontology.RawFilter{Key: c.Property.Name + "." + c.Op, Value: val})
	}
	return out
}

// colProps are the properties of the columns shown.
func (v *exploreView) colProps() []models.Property {
	out := make([]models.Property, 0, len(v.Cols))
	for _, c := range v.Cols {
		out = append(out, c.Property)
	}
	return out
}

func (v *exploreView) row(o models.Object, refs map[string]ontology.ObjectRef) exploreRow {
	r := exploreRow{ID: o.ID, Title: o.ID}
	if pk := v.Type.PrimaryKey; pk != "" {
		if s := valueText(o.Properties.V[pk]); s != "" {
			r.Title = clip(s, exploreCellRunes)
		}
	}
	for _, c := range v.Cols {
		cl := refCell(c.Property.Type.V, o.Properties.V[c.Property.Name], refs)
		cl.Text = clip(cl.Text, exploreCellRunes)
		r.Cells = append(r.Cells, cl)
	}
	return r
}

// link is this table's URL with some parameters changed ("" removes one).
// It carries the table's state only (columns, their filters, sort,
// search, page), once each: a parameter the table does not read, or a
// repeated one, would otherwise be copied into every link of the page.
func (v *exploreView) link(set ...string) string { return v.linkAt("", set...) }

// linkAt is link to the table's page at suffix (/facets: its charts).
func (v *exploreView) linkAt(suffix string, set ...string) string {
	q := url.Values{}
	for _, k := range []string{"sort", "q", "page", "after"} {
		if s := v.state.Get(k); s != "" {
			q.Set(k, s)
		}
	}
	if v.state.Get("cols") != "" {
		q.Set("cols", strings.Join(v.names, ","))
	}
	for _, c := range v.Cols {
		if c.Op != "" {
			q.Set("f."+c.Property.Name, c.Op)
		}
		if c.Value != "" {
			q.Set("v."+c.Property.Name, c.Value)
		}
	}
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] == "" {
			q.Del(set[i])
		} else {
			q.Set(set[i], set[i+1])
		}
	}
	s := Prefix + "/explore/" + url.PathEscape(v.typeRef) + suffix
	if enc := q.Encode(); enc != "" {
		s += "?" + enc
	}
	return s
}

// readPage reads the table's page by its keyset token. A link from before
// keyset pages (?page=N without after) is still served, by offset.
func (v *exploreView) readPage(ctx context.Context, store *ontology.Store, u *models.User, typeID string) ([]models.Object, error) {
	q := ontology.ObjectQuery{Filters: v.filters(), OrderBy: v.Sort, PageToken: v.After, Limit: explorePageSize}
	if v.After == "" {
		q.Offset = v.Page * explorePageSize
	}
	p, err := store.ListObjectsPage(ctx, u, typeID, q)
	v.Next, v.More = p.NextPageToken, p.NextPageToken != ""
	return p.Items, err
}

// NextLink, FirstLink, ToggleLink and MoveLink are the table's links that
// keep its other state.
func (v *exploreView) NextLink() string {
	return v.link("after", v.Next, "page", strconv.Itoa(v.Page+1))
}

func (v *exploreView) FirstLink() string { return v.link("after", "", "page", "") }

func (v *exploreView) ToggleLink(name string) string {
	cols := v.colNames()
	if i := slices.Index(cols, name); i >= 0 {
		cols = slices.Delete(cols, i, i+1)
	} else {
		cols = append(cols, name)
	}
	return v.link("cols", strings.Join(cols, ","), "page", "", "after", "")
}

func (v *exploreView) MoveLink(name string, by int) string {
	cols := v.colNames()
	i := slices.Index(cols, name)
	j := i + by
	if i < 0 || j < 0 || j >= len(cols) {
		return ""
	}
	cols[i], cols[j] = cols[j], cols[i]
	return v.link("cols", strings.Join(cols, ","))
}

// SortState is how the table is sorted by property name: "ascending",
// "descending" or "none" (aria-sort's words).
func (v *exploreView) SortState(name string) string {
	switch v.Sort {
	case name:
		return "ascending"
	case "-" + name:
		return "descending"
	}
	return "none"
}

// SortLink sorts by property name: ascending first, then the other way;
// "" for a property without an order (arrays, JSON, geo points,
// vectors). Filters, columns and search stay; the page starts over.
func (v *exploreView) SortLink(p models.Property) string {
	if !ontology.Orderable(p.Type.V) {
		return ""
	}
	next := p.Name
	if v.Sort == p.Name {
		next = "-" + p.Name
	}
	return v.link("sort", next, "page", "", "after", "")
}

// Shown says whether a property is one of the table's columns.
func (v *exploreView) Shown(name string) bool { return v.shown[name] }

// ColsValue is the chosen columns, for the filter form to keep.
func (v *exploreView) ColsValue() string { return strings.Join(v.names, ",") }

// Links and history on an object's page: a page of each.
const (
	objectLinksPage   = 50
	objectHistoryPage = 20
)

// linkGroup is the object's links of one link type in one direction,
// each other end named by title.
type linkGroup struct {
	LinkType, Direction string
	Ends                []ontology.ObjectRef
}

type objectExtras struct {
	Links      []linkGroup
	LinksPage  int
	LinksMore  bool
	Actions    []ontology.ActionTypeView
	History    []models.Execution
	Names      rowNames
	TypeName   string
	ObjectID   string
	HistoryAll bool
}

// objectExtras reads what an object's page shows beside its properties:
// its links (both directions, grouped by link type, a page at a time), the
// actions the user may run on it, and the executions that targeted it,
// each through the services with the user's read rule.
func (c *Console) objectExtras(g *gin.Context, ot *ontology.ObjectTypeView, o *models.Object) (objectExtras, error) {
	ctx, p := g.Request.Context(), principal(g)
	x := objectExtras{TypeName: ot.Name, ObjectID: o.ID}
	var err error
	if x.LinksPage, err = pageNumber(g.Query("links_page"), "links_page"); err != nil {
		return x, err
	}
	links, err := c.d.Store.ObjectLinks(ctx, p.User, ot.ID, o.ID, ontology.LinkQuery{
		Offset: x.LinksPage * objectLinksPage, Limit: objectLinksPage + 1})
	if err != nil {
		return x, err
	}
	if len(links) > objectLinksPage {
		links, x.LinksMore = links[:objectLinksPage], true
	}
	if x.Links, err = c.groupLinks(g, o.ID, links); err != nil {
		return x, err
	}
	if x.Actions, err = c.runnableOn(g, ot.ID); err != nil {
		return x, err
	}
	f := executions.Filter{Target: o.ID}
	x.HistoryAll = auth.HasPermission(p.User, executions.PermAuditExecutions)
	if !x.HistoryAll {
		f.OnlyActorID = p.User.ID
	}
	if x.History, err = c.d.Executions.List(ctx, f, 0, objectHistoryPage); err != nil {
		return x, err
	}
	c.d.Store.RedactExecutions(ctx, p, x.History)
	names := map[string]string{}
	for _, a := range x.Actions {
		names[a.ID] = displayName(a.DisplayName, a.Name)
	}
	x.Names = c.rowNames(g, names, x.History)
	return x, nil
}

// groupLinks groups links by link type and direction, in first-seen order.
func (c *Console) groupLinks(g *gin.Context, self string, links []models.Link) ([]linkGroup, error) {
	ctx := g.Request.Context()
	var ids []string
	for _, l := range links {
		ids = append(ids, l.SourceID, l.TargetID)
	}
	refs, err := c.d.Store.ObjectTitles(ctx, principal(g).User, ids)
	if err != nil {
		return nil, err
	}
	var out []linkGroup
	index := map[string]int{}
	for _, l := range links {
		dir, other := "outgoing", l.TargetID
		if l.SourceID != self {
			dir, other = "incoming", l.SourceID
		}
		key := l.LinkTypeID + "/" + dir
		i, ok := index[key]
		if !ok {
			name := l.LinkTypeID
			if lt, err := c.d.Store.LinkType(ctx, l.LinkTypeID); err == nil {
				name = displayName(lt.DisplayName, lt.Name)
			}
			i = len(out)
			index[key] = i
			out = append(out, linkGroup{LinkType: name, Direction: dir})
		}
		ref, ok := refs[other]
		if !ok {
			ref = ontology.ObjectRef{ID: other}
		}
		out[i].Ends = append(out[i].Ends, ref)
	}
	return out, nil
}

// runnableOn lists the actions on objects of a type the user may run.
func (c *Console) runnableOn(g *gin.Context, typeID string) ([]ontology.ActionTypeView, error) {
	p := principal(g)
	ats, err := c.d.Store.ListActionTypes(g.Request.Context(), typeID, "", 0, maxListed)
	if err != nil {
		return nil, err
	}
	var out []ontology.ActionTypeView
	for _, at := range ats {
		full := &engine.ActionType{ID: at.ID, Version: at.Version, ActionDefinition: at.ActionDefinition}
		if c.d.Executions.MayRun(full, p.User, p.Guest) == nil {
			out = append(out, at)
		}
	}
	return out, nil
}

// matchCount counts the objects the table's filters select (an
// aggregation's count: through the index, under the read rule).
func (c *Console) matchCount(g *gin.Context, u *models.User, v *exploreView) (string, error) {
	res, err := c.d.Store.Aggregate(g.Request.Context(), u, v.Type.ID, ontology.AggregateRequest{Filters: aggFilters(v.filters())})
	if err != nil {
		return "", err
	}
	n, _ := res.Groups[0].Metrics["count"].(int64)
	if n == 1 {
		return "1 object matches.", nil
	}
	return strconv.FormatInt(n, 10) + " objects match.", nil
}

// countLabel prints a type's count with thousands separators; an
// estimate as "about N", N to two significant digits.
func countLabel(c ontology.TypeCount) string {
	if !c.About {
		return thousands(c.N)
	}
	n, unit := c.N, int64(1)
	for n >= 100 {
		n, unit = n/10, unit*10
	}
	return "about " + thousands(n*unit)
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// clip shortens s to n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
