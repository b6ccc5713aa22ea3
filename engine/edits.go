package engine

import (
	"context"

	"github.com/ontoflow/ontoflow/models"
)

// DeleteObject deletes the object id and its links through onto inside tx,
// and returns the edit that records it: the whole object and every link
// removed with it, so revert.Invert can recreate them exactly. The
// delete_object kind and a function's delete edit both write it.
func DeleteObject(ctx context.Context, onto Ontology, tx models.Tx, id string) (models.Edit, error) {
	obj, links, err := onto.In(tx).DeleteObject(ctx, id)
	if err != nil {
		return models.Edit{}, err
	}
	ed := models.Edit{Op: models.EditDeleteObject, ObjectTypeID: obj.ObjectTypeID, ObjectID: obj.ID, Before: obj.Properties,
		Marking: obj.Marking, Organization: obj.Organization, CreatedBy: obj.CreatedBy,
		CreatedAt: TimePtr(obj.CreatedAt), UpdatedAtBefore: TimePtr(obj.UpdatedAt)}
	for _, l := range links {
		ed.Links = append(ed.Links, models.EditLink{ID: l.ID, LinkTypeID: l.LinkTypeID, SourceID: l.SourceID, TargetID: l.TargetID,
			Properties: l.Properties, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt})
	}
	return ed, nil
}
