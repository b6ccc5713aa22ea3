package ontology

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// Orderings and keyset pages of the object listing (docs/ontology.md,
// "Ordering and pages").

// Order fields that are not properties.
const (
	OrderCreated = "created_at"
	OrderUpdated = "updated_at"
)

// order is a listing's ordering: by creation (field ""), by last update,
// or by a property's index rows; ties by creation, then id, in the same
// direction.
type order struct {
	field string
	desc  bool
	// prop is the property's index key; strs: its value rows may hold
	// KeyInstantText rows, which the ordering skips.
	prop int64
	strs bool
}

// spec is the order as order_by spells it ("" for the default).
func (o order) spec() string {
	f := o.field
	if f == "" {
		if !o.desc {
			return ""
		}
		f = OrderCreated
	}
	if o.desc {
		return "-" + f
	}
	return f
}

// orderable are the property types an ordering may use: those whose
// values have keys in a meaningful order (not arrays, JSON, geo points,
// vectors: their keys are hashes).
var orderable = map[string]bool{domain.TypeString: true, domain.TypeInteger: true, domain.TypeDouble: true,
	domain.TypeBoolean: true, domain.TypeDate: true, domain.TypeTimestamp: true, domain.TypeMarking: true,
	domain.TypeReference: true, domain.TypeMediaReference: true}

// Orderable says whether a listing may be ordered by a property of type t.
func Orderable(t domain.PropertyType) bool { return orderable[t.Base] }

// parseOrder reads order_by: created_at, updated_at or a property of ts,
// "-" first for descending.
func parseOrder(ts *typeState, raw string) (order, error) {
	name, desc := strings.CutPrefix(raw, "-")
	switch name {
	case "", OrderCreated:
		if raw == "-" {
			break
		}
		return order{desc: desc}, nil
	case OrderUpdated:
		return order{field: OrderUpdated, desc: desc}, nil
	}
	p, ok := ts.byKey[name]
	if !ok {
		return order{}, apperr.New(apperr.InvalidArgument, "order_by: object type %s has no property %q (order by a property, created_at or updated_at; - first for descending)", ts.ot.Name, name).
			WithDetails(apperr.Detail{Field: "order_by", Reason: "unknown_property", Message: "unknown property"})
	}
	t := p.Type.V
	if !orderable[t.Base] {
		return order{}, apperr.New(apperr.InvalidArgument, "order_by: property %q of type %s cannot be ordered", name, t).
			WithDetails(apperr.Detail{Field: "order_by", Reason: "not_orderable", Message: "type " + t.String() + " has no order"})
	}
	return order{field: name, desc: desc, prop: models.PropKey(*p),
		strs: t.Base == domain.TypeString || t.Base == domain.TypeMarking}, nil
}

// cursor is a keyset position: the sort key (property orders), the
// time (creation or update, Unix µs) and the id of the last object of a
// page.
type cursor struct {
	Version int    `json:"v"`
	Order   string `json:"o,omitempty"`
	Key     []byte `json:"k,omitempty"`
	At      int64  `json:"t"`
	ID      string `json:"i"`
}

// cursorAfter is the position after o in ord.
func cursorAfter(ord order, o *models.Object) cursor {
	c := cursor{Version: 1, Order: ord.spec(), At: models.CreatedKey(o.CreatedAt), ID: o.ID}
	switch {
	case ord.field == OrderUpdated:
		c.At = o.UpdatedAt.UnixMicro()
	case ord.field != "":
		c.Key = models.SortKey(o.Properties.V[ord.field])
	}
	return c
}

// nextPage cuts items, read with one row more than a page of limit, to
// the page, with the token of the position after its last item ("" when
// no row followed).
func nextPage[T any](items []T, limit int, after func(*T) cursor) ([]T, string) {
	if len(items) <= limit || limit <= 0 {
		return items[:min(len(items), max(limit, 0))], ""
	}
	return items[:limit], after(&items[limit-1]).token()
}

func (c cursor) token() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func badToken(msg string) error {
	return apperr.New(apperr.InvalidArgument, "page_token: %s", msg).
		WithDetails(apperr.Detail{Field: "page_token", Reason: "invalid", Message: msg})
}

// parseToken reads a page token for ord: a keyset cursor, or (tokens
// issued before keyset pages) an offset.
func parseToken(ord order, tok string) (*cursor, int, error) {
	if tok == "" {
		return nil, 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, 0, badToken("not a token this API issued")
	}
	if n, err := strconv.Atoi(string(b)); err == nil {
		if n < 0 {
			return nil, 0, badToken("not a token this API issued")
		}
		return nil, n, nil
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Version != 1 || c.ID == "" {
		return nil, 0, badToken("not a token this API issued")
	}
	if _, err := models.IDKey(c.ID); err != nil {
		return nil, 0, badToken("not a token this API issued")
	}
	if c.Order != ord.spec() {
		return nil, 0, badToken("issued for order_by=" + c.Order + ", not " + ord.spec() + " (keep order_by while paging)")
	}
	if ord.field != "" && ord.field != OrderUpdated && len(c.Key) == 0 {
		return nil, 0, badToken("not a token this API issued")
	}
	return &c, 0, nil
}

// sortCols are the columns a statement orders by, most significant
// first, and whether the time column is a timestamp (else Unix µs).
type sortCols struct {
	key, at, id string
	atTime      bool
	// idKey: id is the index's object id (models.IDKey), not text.
	idKey bool
}

// keysetSQL is the condition "after c" over cols in direction desc: a
// row-value comparison (key, at, id) > (c.Key, c.At, c.ID), which both
// databases answer as one range of an index on those columns (written
// out with OR, SQLite split it into a MULTI-INDEX OR and sorted).
func keysetSQL(cols sortCols, c *cursor, desc bool) (string, []any) {
	var names []string
	var vals []any
	if cols.key != "" {
		names, vals = append(names, cols.key), append(vals, c.Key)
	}
	var at any = c.At
	if cols.atTime {
		at = time.UnixMicro(c.At).UTC()
	}
	var id any = c.ID
	if cols.idKey {
		id, _ = models.IDKey(c.ID) // parseToken checked it
	}
	names, vals = append(names, cols.at, cols.id), append(vals, at, id)
	op := " > "
	if desc {
		op = " < "
	}
	// "( ?": gorm expands a []byte right after "(" as a list.
	return "(" + strings.Join(names, ", ") + ")" + op + "( " + strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ") + ")", vals
}

// orderSQL is the ORDER BY clause over cols.
func orderSQL(cols sortCols, desc bool) string {
	dir := ""
	if desc {
		dir = " DESC"
	}
	var parts []string
	for _, c := range []string{cols.key, cols.at, cols.id} {
		if c != "" {
			parts = append(parts, c+dir)
		}
	}
	return strings.Join(parts, ", ")
}
