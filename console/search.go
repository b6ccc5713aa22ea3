package console

import (
	"context"
	"fmt"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// maxOptions bounds a picker's list: a longer one is no help to pick
// from, and typing more narrows it.
const maxOptions = 20

// searchObjects finds up to maxOptions objects of a type the caller may
// read: with an empty search the first ones, else the object whose id is
// q, then those whose primary key, then whose other properties match q.
func (c *Console) searchObjects(g *gin.Context, typeRef, q string) ([]objectOption, error) {
	if typeRef == "" {
		return nil, nil
	}
	if err := searchBound(q); err != nil {
		return nil, err
	}
	ctx, u := g.Request.Context(), principal(g).User
	ot, err := c.d.Store.ObjectType(ctx, typeRef)
	if err != nil {
		return nil, err
	}
	objs, err := c.findObjects(ctx, u, ot, strings.TrimSpace(q))
	if err != nil {
		return nil, fmt.Errorf("search %s objects: %w", ot.Name, err)
	}
	out := make([]objectOption, 0, len(objs))
	for i := range objs {
		label := valueText(objs[i].Properties.V[ot.PrimaryKey])
		if ot.PrimaryKey == "" || label == "" {
			label = objs[i].ID
		}
		out = append(out, objectOption{ID: objs[i].ID, Label: label, Marking: objs[i].Marking})
	}
	return out, nil
}

// findObjects runs the search as the store's own queries, so the read
// rule (auth.ReadScope, applied in SQL by the store) decides what is
// found, and every readable object of the type can be found, not only
// those in a first page: the object whose id is q, then those whose
// primary key matches, then those another property matches: at most two
// scans of the type.
func (c *Console) findObjects(ctx context.Context, u *models.User, ot *ontology.ObjectTypeView, q string) ([]models.Object, error) {
	return c.findObjectsUpTo(ctx, u, ot, q, maxOptions)
}

// findObjectsUpTo is findObjects with another bound (the explorer's page).
func (c *Console) findObjectsUpTo(ctx context.Context, u *models.User, ot *ontology.ObjectTypeView, q string, limit int) ([]models.Object, error) {
	if q == "" {
		return c.d.Store.ListObjects(ctx, u, ot.ID, ontology.ObjectQuery{Limit: limit})
	}
	var found objectSet
	if domain.IsUUID(q) {
		o, err := c.d.Store.GetObject(ctx, u, ot.ID, q)
		if err != nil && !hasCode(err, apperr.ObjectNotFound) {
			return nil, err
		}
		if o != nil {
			found.add(*o)
		}
	}
	// Primary-key matches first (one scan), then any other property's
	// (a second scan, only when the first did not fill the list).
	pk, rest := searchFilters(ot, q)
	for _, fs := range [][]ontology.RawFilter{pk, rest} {
		if len(fs) == 0 || len(found.list) >= limit {
			continue
		}
		objs, err := c.d.Store.SearchObjects(ctx, u, ot.ID, fs, limit)
		if err != nil {
			return nil, err
		}
		found.add(objs...)
	}
	return found.first(limit), nil
}

// searchFilters are the store filters a search tries, the primary key's
// apart from the others' (any of which matches): "includes" (a substring, case-sensitive) for text and lists of
// text, "is" for the other scalar types. A q that is no value of a
// property's type matches nothing in it.
func searchFilters(ot *ontology.ObjectTypeView, q string) (pk, rest []ontology.RawFilter) {
	for _, p := range ot.Properties {
		key, ok := ontology.SearchKey(p.Name, p.Type.V)
		if !ok {
			continue
		}
		f := ontology.RawFilter{Key: key, Value: q}
		if p.Name == ot.PrimaryKey {
			pk = append(pk, f)
		} else {
			rest = append(rest, f)
		}
	}
	return pk, rest
}

// objectSet keeps objects in the order found, each once.
type objectSet struct {
	list []models.Object
	seen map[string]bool
}

func (s *objectSet) add(objs ...models.Object) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	for _, o := range objs {
		if !s.seen[o.ID] {
			s.seen[o.ID] = true
			s.list = append(s.list, o)
		}
	}
}

func (s *objectSet) first(n int) []models.Object {
	if len(s.list) > n {
		return s.list[:n]
	}
	return s.list
}

func hasCode(err error, code apperr.Code) bool {
	ae, ok := apperr.As(err)
	return ok && ae.Code == code
}
