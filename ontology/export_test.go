package ontology

import (
	"context"
	"fmt"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// OracleConditions parses raw filters on typeRef as ListObjects does.
func (s *Store) OracleConditions(ctx context.Context, typeRef string, raw []RawFilter) ([]domain.Condition, error) {
	ts, err := loadTypeState(ctx, s.db, typeRef)
	if err != nil {
		return nil, err
	}
	return parseFilters(ts, raw, s.levels)
}

// OracleMatch is the Go evaluator of filters on one object: the oracle
// the database path is tested against (and what filters were before it).
func (s *Store) OracleMatch(conds []domain.Condition, o *models.Object) bool {
	return domain.EvaluateAll(conds, domain.EvalEnv{Target: &domain.EvalTarget{ID: o.ID, Marking: o.Marking,
		CreatedBy: o.CreatedBy, Properties: o.Properties.V}, Markings: s.levels})
}

// ObjectsSQL is the statement ListObjects runs for raw (the EXPLAIN test).
func (s *Store) ObjectsSQL(ctx context.Context, u *models.User, typeRef string, raw []RawFilter, orderBy, pageToken string, limit int) (string, []any, error) {
	ts, fs, err := s.sqlFilters(ctx, typeRef, raw)
	if err != nil {
		return "", nil, err
	}
	ord, err := parseOrder(ts, orderBy)
	if err != nil {
		return "", nil, err
	}
	after, offset, err := parseToken(ord, pageToken)
	if err != nil {
		return "", nil, err
	}
	q, args, ok := s.objectsSQL(u, ts, fs, ord, after, offset, limit)
	if !ok {
		return "", nil, fmt.Errorf("filters %v match nothing", raw)
	}
	return q, args, nil
}

// OracleSortKey is the key an ordering by a property compares for v.
func OracleSortKey(v any) []byte { return models.SortKey(v) }

// OracleObjectLinks is an object's links as ObjectLinks listed them
// before the read rule was in the query (the differential test's
// oracle): every link of the object in creation order, kept when
// readableLinks keeps it, then q's offset and limit.
func (s *Store) OracleObjectLinks(ctx context.Context, u *models.User, typeRef, objectID string, q LinkQuery) ([]models.Link, error) {
	o, err := s.readable(ctx, s.db, u, typeRef, objectID)
	if err != nil {
		return nil, err
	}
	db := s.db.WithContext(ctx)
	switch q.Direction {
	case "":
		db = db.Where("(source_id = ? OR target_id = ?)", o.ID, o.ID)
	case "outgoing":
		db = db.Where("source_id = ?", o.ID)
	case "incoming":
		db = db.Where("target_id = ?", o.ID)
	}
	if q.LinkType != "" {
		lt, err := findLinkType(ctx, s.db, q.LinkType)
		if err != nil {
			return nil, err
		}
		db = db.Where("link_type_id = ?", lt.ID)
	}
	var all []models.Link
	if err := db.Order("created_at, id").Find(&all).Error; err != nil {
		return nil, err
	}
	vis, err := s.readableLinks(ctx, u, all)
	if err != nil {
		return nil, err
	}
	vis = vis[min(q.Offset, len(vis)):]
	return vis[:min(q.Limit, len(vis))], nil
}

// ObjectLinksSQL is the statement ObjectLinksPage runs (the EXPLAIN test).
func (s *Store) ObjectLinksSQL(ctx context.Context, u *models.User, typeRef, objectID string, q LinkQuery) (string, []any, error) {
	return s.objectLinksSQL(ctx, u, typeRef, objectID, q, true)
}

// WindowSQL is the statement of a Postgres substring search's first
// window (the EXPLAIN test); "" when raw's search is not read through
// windows.
func (s *Store) WindowSQL(ctx context.Context, u *models.User, typeRef string, raw []RawFilter) (string, []any, error) {
	ts, fs, err := s.sqlFilters(ctx, typeRef, raw)
	if err != nil {
		return "", nil, err
	}
	_, like := s.windowable(fs, order{}, 0)
	if like == "" {
		return "", nil, nil
	}
	q, args, _ := s.statement(u, ts, fs, order{}, nil, 0, 100, &textWindow{window: textWindowFirst, like: like})
	return q, args, nil
}
