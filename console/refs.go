package console

import (
	"context"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// References on the console's pages: a reference value is shown as the
// title of the object it names, linked to its page, never as the UUID
// the record holds. The titles are read through ontology.ObjectTitles,
// under the reader's read rule: an object the reader may not read (or
// one that is gone) shows as "hidden object" and nothing of it leaks.

// cell is a value as a table cell or a definition shows it: Text, or,
// for a reference (or a list of them), Refs by title.
type cell struct {
	Text string
	Refs []refLink
}

// refLink is one referenced object: its title and page, or Hidden.
type refLink struct {
	ontology.ObjectRef
	Hidden bool
}

// refIDs are the object ids a value of type t names: one for a reference,
// each element's for a list of references, none for anything else.
func refIDs(t domain.PropertyType, v any) []string {
	switch {
	case t.Base == domain.TypeReference:
		if s, ok := v.(string); ok && s != "" {
			return []string{s}
		}
	case t.Base == domain.TypeArray && t.ElementType != nil && t.ElementType.Base == domain.TypeReference:
		xs, _ := v.([]any)
		var out []string
		for _, x := range xs {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// refCell is value v of type t as a cell: a reference by its object's
// title (names holds the titles the reader may see), anything else as
// valueText.
func refCell(t domain.PropertyType, v any, names map[string]ontology.ObjectRef) cell {
	ids := refIDs(t, v)
	if len(ids) == 0 {
		return cell{Text: valueText(v)}
	}
	c := cell{Refs: make([]refLink, 0, len(ids))}
	for _, id := range ids {
		ref, ok := names[id]
		c.Refs = append(c.Refs, refLink{ObjectRef: ref, Hidden: !ok})
	}
	return c
}

// refTitles reads, in one query, the titles of the objects that the
// reference values of objs' properties (of the given types) name.
func (c *Console) refTitles(ctx context.Context, u *models.User, props []models.Property, objs []models.Object) (map[string]ontology.ObjectRef, error) {
	var ids []string
	for _, o := range objs {
		for _, p := range props {
			ids = append(ids, refIDs(p.Type.V, o.Properties.V[p.Name])...)
		}
	}
	return c.d.Store.ObjectTitles(ctx, u, ids)
}
