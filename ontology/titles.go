package ontology

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ontoflow/ontoflow/auth"
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

// TypeCount is how many objects of a type a caller may read, as the
// explorer's type list shows it: exactly, or About when only an
// estimate is cheap.
type TypeCount struct {
	N     int64
	About bool
}

// estimateSample is how many of a type's newest objects the SQLite
// estimate of a reader's count reads.
const estimateSample = 1000

// CountForList counts the objects of a type that u may read for a list
// of types: a caller who may read every object gets the type's counter
// (exact, one sum of a few rows however many objects); a reader with a
// read rule an exact count up to exactUpTo objects (reading at most that
// many), and past it an estimate: on Postgres the planner's row estimate
// of the readable objects (its statistics of type, marking and
// organization), on SQLite, whose planner keeps no such estimate, the
// share of the type's newest estimateSample objects the reader may read
// times the type's counter.
func (s *Store) CountForList(ctx context.Context, u *models.User, typeRef string, exactUpTo int) (TypeCount, error) {
	ts, err := loadTypeState(ctx, s.db, typeRef)
	if err != nil {
		return TypeCount{}, err
	}
	total, err := models.TypeCount(ctx, s.db, ts.ot.ID)
	if err != nil {
		return TypeCount{}, err
	}
	sc := s.levels.ReadScope(u)
	if sc.All {
		return TypeCount{N: total}, nil
	}
	n, err := s.CountReadable(ctx, u, ts.ot.ID, exactUpTo+1)
	if err != nil || n <= int64(exactUpTo) {
		return TypeCount{N: n}, err
	}
	est, err := s.estimateReadable(ctx, sc, ts, total)
	if err != nil {
		return TypeCount{}, err
	}
	// At least what was counted, at most the type's objects.
	return TypeCount{N: min(max(est, int64(exactUpTo)+1), total), About: true}, nil
}

// estimateReadable estimates how many of the type's total objects a
// reader of scope sc may read (see CountForList).
func (s *Store) estimateReadable(ctx context.Context, sc auth.ReadScope, ts *typeState, total int64) (int64, error) {
	cond, args := sc.SQL("o")
	if models.IsPostgres(s.db) {
		var plan string
		q := "EXPLAIN (FORMAT JSON) SELECT 1 FROM objects o WHERE o.object_type_id = ? AND " + cond
		if err := s.db.WithContext(ctx).Raw(q, append([]any{ts.ot.ID}, args...)...).Row().Scan(&plan); err != nil {
			return 0, fmt.Errorf("estimate the readable objects of %s: %w", ts.ot.Name, err)
		}
		var out []struct {
			Plan struct {
				Rows float64 `json:"Plan Rows"`
			} `json:"Plan"`
		}
		if err := json.Unmarshal([]byte(plan), &out); err != nil || len(out) == 0 {
			return 0, fmt.Errorf("estimate the readable objects of %s: read the plan: %v", ts.ot.Name, err)
		}
		return int64(out[0].Plan.Rows), nil
	}
	var seen, readable int64
	q := "SELECT COUNT(*), COALESCE(SUM(CASE WHEN " + cond + " THEN 1 ELSE 0 END), 0) FROM (SELECT marking, organization FROM objects INDEXED BY idx_object_type " +
		"WHERE object_type_id = ? ORDER BY created_at DESC LIMIT ?) o"
	if err := s.db.WithContext(ctx).Raw(q, append(args, ts.ot.ID, estimateSample)...).Row().Scan(&seen, &readable); err != nil {
		return 0, fmt.Errorf("estimate the readable objects of %s: %w", ts.ot.Name, err)
	}
	if seen == 0 {
		return 0, nil
	}
	return total * readable / seen, nil
}
