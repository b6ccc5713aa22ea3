package ontology

import (
	"context"
	"fmt"

	"github.com/ontoflow/ontoflow/models"
)

// ObjectRef is how a page names an object: its type's name and its title
// (the primary key's value, or the id when that is empty).
type ObjectRef struct {
	ID, TypeName, Title string
}

// ObjectTitles names the objects of ids that u may read, in one query
// through the primary key and the read rule; an object u may not read,
// or one that no longer exists, is left out, so a page shows the bare id
// it already had and learns nothing more.
func (s *Store) ObjectTitles(ctx context.Context, u *models.User, ids []string) (map[string]ObjectRef, error) {
	out := map[string]ObjectRef{}
	if len(ids) == 0 {
		return out, nil
	}
	var objs []models.Object
	q := s.visible(s.db.WithContext(ctx).Model(&models.Object{}).Where("id IN ?", ids), u, "objects")
	if err := q.Find(&objs).Error; err != nil {
		return nil, fmt.Errorf("read the objects to name: %w", err)
	}
	types := map[string]*models.ObjectType{}
	for _, o := range objs {
		ot, ok := types[o.ObjectTypeID]
		if !ok {
			var err error
			if ot, err = findObjectType(ctx, s.db, o.ObjectTypeID); err != nil {
				return nil, err
			}
			types[o.ObjectTypeID] = ot
		}
		ref := ObjectRef{ID: o.ID, TypeName: ot.Name, Title: o.ID}
		if v, ok := o.Properties.V[ot.PrimaryKey].(string); ok && v != "" {
			ref.Title = v
		} else if v := o.Properties.V[ot.PrimaryKey]; v != nil {
			ref.Title = fmt.Sprint(v)
		}
		out[o.ID] = ref
	}
	return out, nil
}

// CountReadable counts the objects of a type that u may read, up to
// limit: a type's page shows "10,000+" rather than scanning a million
// rows to print an exact number nobody reads.
func (s *Store) CountReadable(ctx context.Context, u *models.User, typeRef string, limit int) (int64, error) {
	ts, err := loadTypeState(ctx, s.db, typeRef)
	if err != nil {
		return 0, err
	}
	var n int64
	sub := s.readableOfType(ctx, u, ts).Select("id").Limit(limit)
	if err := s.db.WithContext(ctx).Table("(?) AS capped", sub).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count %s objects: %w", ts.ot.Name, err)
	}
	return n, nil
}
