package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// Reads is invokefunction.Reads over the ontology store: the store's
// listing routes' own reads, so a function sees what the actor would see
// through the API and nothing more.
type Reads struct{ store *ontology.Store }

// NewReads returns the reads over store. These reads consult no operation
// kind, so store may be one built before the kinds registry (the function
// kind holding these reads is in that registry, which the assembled
// store needs first): app builds one that way.
func NewReads(store *ontology.Store) *Reads { return &Reads{store: store} }

// Store is the store the reads go through (a test run's host reads
// objects from it).
func (r *Reads) Store() *ontology.Store { return r.store }

// over reads through tx when set (a what-if's branch), else the store's
// own connections.
func (r *Reads) over(tx models.Tx) *ontology.Store {
	if tx.None() {
		return r.store
	}
	return r.store.Over(tx.Gorm())
}

// OrderByKey carries ctx.ontology.query's order_by option among the
// filters (the runtime's shim puts it there; no property name starts
// with "$"), so the host interfaces keep their shape.
const OrderByKey = "$order_by"

// Query implements invokefunction.Reads. A filter's key is a property
// ("status") or a property and operator ("score.gt"), as on the REST
// listing; values are taken as the query string would carry them.
func (r *Reads) Query(ctx context.Context, tx models.Tx, actor *models.User, objectType string, filters map[string]any, limit int) ([]domain.Object, error) {
	q := ontology.ObjectQuery{Limit: limit}
	for k, v := range filters {
		if k == OrderByKey {
			q.OrderBy = fmt.Sprint(v)
			continue
		}
		s, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("filter %s: %w", k, err)
			}
			s = string(b)
		}
		q.Filters = append(q.Filters, ontology.RawFilter{Key: k, Value: s})
	}
	objs, err := r.over(tx).ListObjects(ctx, actor, objectType, q)
	if err != nil {
		return nil, err
	}
	out := make([]domain.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, domain.Object{ID: o.ID, ObjectTypeID: o.ObjectTypeID, Properties: o.Properties.V, Marking: o.Marking,
			CreatedBy: o.CreatedBy, Organization: o.Organization, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt})
	}
	return out, nil
}

// Aggregate implements invokefunction.Reads: request is the body of the
// REST aggregation, decoded as strictly as the route decodes it (an
// unknown member is an error naming it).
func (r *Reads) Aggregate(ctx context.Context, tx models.Tx, actor *models.User, objectType string, request json.RawMessage) (any, error) {
	var req ontology.AggregateRequest
	if len(request) > 0 {
		dec := json.NewDecoder(bytes.NewReader(request))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			return nil, apperr.New(apperr.InvalidArgument, "the aggregation request is not valid: %v", err)
		}
	}
	res, err := r.over(tx).Aggregate(ctx, actor, objectType, req)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Links implements invokefunction.Reads.
func (r *Reads) Links(ctx context.Context, tx models.Tx, actor *models.User, objectTypeID, objectID, linkType string) ([]domain.Link, error) {
	ls, err := r.over(tx).ObjectLinks(ctx, actor, objectTypeID, objectID, ontology.LinkQuery{LinkType: linkType, Limit: 1000})
	if err != nil {
		return nil, err
	}
	out := make([]domain.Link, 0, len(ls))
	for _, l := range ls {
		out = append(out, domain.Link{ID: l.ID, LinkTypeID: l.LinkTypeID, SourceID: l.SourceID, TargetID: l.TargetID,
			Properties: l.Properties.V, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt})
	}
	return out, nil
}
