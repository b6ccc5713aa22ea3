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
	ts, err := loadTypeState(ctx, s.db, typeRef)
	if err != nil {
		return "", nil, err
	}
	conds, err := parseFilters(ts, raw, s.levels)
	if err != nil {
		return "", nil, err
	}
	fs := make([]valueFilter, len(conds))
	for i, c := range conds {
		fs[i] = s.sqlFilter(ts, c)
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
