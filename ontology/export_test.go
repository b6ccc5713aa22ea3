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
func (s *Store) ObjectsSQL(ctx context.Context, u *models.User, typeRef string, raw []RawFilter, limit int) (string, []any, error) {
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
	q, args, ok := s.objectsSQL(u, ts, fs, 0, limit)
	if !ok {
		return "", nil, fmt.Errorf("filters %v match nothing", raw)
	}
	return q, args, nil
}
