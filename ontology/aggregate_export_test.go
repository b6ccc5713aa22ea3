package ontology

import (
	"context"
	"fmt"

	"github.com/ontoflow/ontoflow/models"
)

// AggregateSQL is the statement of an aggregation's pass over the
// metric's property (or of its counts) (the EXPLAIN test).
func (s *Store) AggregateSQL(ctx context.Context, u *models.User, typeRef string, req AggregateRequest, metricProp string) (string, []any, error) {
	raw, err := req.rawFilters()
	if err != nil {
		return "", nil, err
	}
	ts, fs, err := s.sqlFilters(ctx, typeRef, raw)
	if err != nil {
		return "", nil, err
	}
	ls, err := levelSpecs(ts, req.GroupBy)
	if err != nil {
		return "", nil, err
	}
	var mp *models.Property
	if metricProp != "" {
		mp = ts.byKey[metricProp]
	}
	q, args, ok := s.aggSQL(u, ts, fs, nil, ls, mp, nil)
	if !ok {
		return "", nil, fmt.Errorf("filters %v match nothing", raw)
	}
	return q, args, nil
}

// SetExactDistinctUpTo lowers the exact limit of approximate_distinct for
// a test and returns the restore.
func SetExactDistinctUpTo(n int) func() {
	old := exactDistinctUpTo
	exactDistinctUpTo = n
	return func() { exactDistinctUpTo = old }
}
