package models

import "fmt"

// Inverse returns the edits that undo ed, one of the ontology's edit
// operations (Edit*), whichever kind recorded it: the kinds that write the
// ontology directly, and a function's edits of every op, invert through
// it, so an op's inverse is written once. It lives with the record because
// it needs nothing else: the kinds call it without importing revert, which
// applies the inverses.
func (ed Edit) Inverse() ([]Edit, error) {
	switch ed.Op {
	case EditUpdateObject:
		return invertUpdateObject(ed), nil
	case EditCreateObject:
		return invertCreateObject(ed)
	case EditDeleteObject:
		return invertDeleteObject(ed)
	case EditCreateLink:
		return invertCreateLink(ed)
	case EditDeleteLink:
		return invertDeleteLink(ed)
	}
	return nil, fmt.Errorf("a %s edit has no inverse", ed.Op)
}

// invertUpdateObject puts back the before values of the touched
// properties, expecting the object as the edit left it.
func invertUpdateObject(ed Edit) []Edit {
	return []Edit{{Op: EditUpdateObject, ObjectTypeID: ed.ObjectTypeID, ObjectID: ed.ObjectID,
		Before: ed.After, After: ed.Before, UpdatedAtBefore: ed.UpdatedAtAfter}}
}

// invertCreateObject deletes the created object, expecting it as the edit
// left it.
func invertCreateObject(ed Edit) ([]Edit, error) {
	if ed.ObjectID == "" {
		return nil, fmt.Errorf("create_object cannot invert a %s edit without an object id", ed.Op)
	}
	return []Edit{{Op: EditDeleteObject, ObjectTypeID: ed.ObjectTypeID, ObjectID: ed.ObjectID,
		Before: ed.After, Marking: ed.Marking, Organization: ed.Organization, CreatedBy: ed.CreatedBy,
		CreatedAt: ed.CreatedAt, UpdatedAtBefore: ed.UpdatedAtAfter}}, nil
}

// invertDeleteObject recreates the object and every link removed with it,
// with their ids.
func invertDeleteObject(ed Edit) ([]Edit, error) {
	if ed.ObjectID == "" || ed.Marking == "" {
		return nil, fmt.Errorf("delete_object cannot invert this %s edit: it does not record the whole object (recorded before edits kept it)", ed.Op)
	}
	out := []Edit{{Op: EditCreateObject, ObjectTypeID: ed.ObjectTypeID, ObjectID: ed.ObjectID, After: ed.Before,
		Marking: ed.Marking, Organization: ed.Organization, CreatedBy: ed.CreatedBy, CreatedAt: ed.CreatedAt,
		UpdatedAtAfter: ed.UpdatedAtBefore}}
	for _, l := range ed.Links {
		at := l.CreatedAt
		out = append(out, Edit{Op: EditCreateLink, LinkTypeID: l.LinkTypeID, LinkID: l.ID,
			SourceID: l.SourceID, TargetID: l.TargetID, After: l.Properties, CreatedBy: l.CreatedBy, CreatedAt: &at})
	}
	return out, nil
}

// invertCreateLink deletes the link by its id.
func invertCreateLink(ed Edit) ([]Edit, error) {
	if ed.LinkID == "" {
		return nil, fmt.Errorf("create_link cannot invert a %s edit without a link id", ed.Op)
	}
	return []Edit{{Op: EditDeleteLink, LinkTypeID: ed.LinkTypeID, LinkID: ed.LinkID,
		SourceID: ed.SourceID, TargetID: ed.TargetID}}, nil
}

// invertDeleteLink recreates the deleted link with its id, properties,
// creator and time.
func invertDeleteLink(ed Edit) ([]Edit, error) {
	if ed.LinkID == "" || ed.CreatedAt == nil {
		return nil, fmt.Errorf("this delete_link edit does not record the whole link")
	}
	return []Edit{{Op: EditCreateLink, LinkTypeID: ed.LinkTypeID, LinkID: ed.LinkID, SourceID: ed.SourceID,
		TargetID: ed.TargetID, After: ed.Before, CreatedBy: ed.CreatedBy, CreatedAt: ed.CreatedAt}}, nil
}
