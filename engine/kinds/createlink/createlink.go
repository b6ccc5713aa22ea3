package createlink

import (
	"context"
	"fmt"
	"github.com/ontoflow/ontoflow/engine"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// CreateLink is the create_link kind: it links the target to the object a
// reference input names, on the configured side of a link type.
type CreateLink struct{}

// createLinkConfig is create_link's operation config: the link type, the
// input holding the other object's id (a reference input) and the side of
// the link the target object is on.
type createLinkConfig struct {
	LinkTypeID       string `json:"link_type_id,omitempty"`
	OtherObjectInput string `json:"other_object_input,omitempty"`
	TargetSide       string `json:"target_side,omitempty"`
}

// Name implements domain.OperationKind.
func (CreateLink) Name() string { return domain.KindCreateLink }

// NeedsObjectType implements domain.OperationKind.
func (CreateLink) NeedsObjectType() bool { return true }

// HasTarget implements domain.OperationKind: always.
func (CreateLink) HasTarget(string) bool { return true }

// NewConfig implements domain.OperationKind.
func (CreateLink) NewConfig() any { return &createLinkConfig{} }

// CheckConfig implements domain.OperationKind.
func (CreateLink) CheckConfig(_ context.Context, s *domain.KindScope, cfg any) error {
	c := cfg.(*createLinkConfig)
	return s.CheckLinkEnds(c.LinkTypeID, c.OtherObjectInput, c.TargetSide)
}

// ResolveRefs implements domain.RefResolver: link_type_id may name the
// link type.
func (CreateLink) ResolveRefs(cfg any, refs domain.TypeRefs) error {
	c := cfg.(*createLinkConfig)
	if c.LinkTypeID == "" || domain.IsUUID(c.LinkTypeID) {
		return nil
	}
	id, ok, err := refs.LinkTypeID(c.LinkTypeID)
	if ok {
		c.LinkTypeID = id
	}
	return err
}

// References implements domain.OperationKind.
func (CreateLink) References(cfg any) domain.References {
	return domain.References{LinkTypeIDs: []string{cfg.(*createLinkConfig).LinkTypeID}}
}

// ends orders the target and the other object as the link's source and
// target.
func (c *createLinkConfig) ends(targetID string, params map[string]any) (src, dst string) {
	other, _ := params[c.OtherObjectInput].(string)
	if c.TargetSide == domain.SideTarget {
		return other, targetID
	}
	return targetID, other
}

// Preview implements Kind.
func (CreateLink) Preview(_ context.Context, op *engine.Op) ([]models.Edit, error) {
	c := op.Config.(*createLinkConfig)
	src, dst := c.ends(op.Target.ID, op.Params)
	return []models.Edit{{Op: models.EditCreateLink, LinkTypeID: c.LinkTypeID, SourceID: src, TargetID: dst}}, nil
}

// Apply implements Kind.
func (CreateLink) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	c := op.Config.(*createLinkConfig)
	// The other end comes from a parameter: the actor must be able to read
	// it, as the REST link route requires of both ends. One it may not read
	// is answered as absent, so the action cannot probe for it either.
	otherID, _ := op.Params[c.OtherObjectInput].(string)
	other, err := op.Ontology.In(op.Tx).Object(ctx, otherID)
	if err != nil {
		return nil, fmt.Errorf("load the link's other end %s: %w", otherID, err)
	}
	if other == nil || !op.Ontology.CanRead(op.Actor, other.Marking, other.Organization) {
		return nil, apperr.New(apperr.ObjectNotFound, "object %q not found", otherID)
	}
	src, dst := c.ends(op.Target.ID, op.Params)
	id, err := op.Ontology.In(op.Tx).CreateLink(ctx, c.LinkTypeID, src, dst)
	if err != nil {
		return nil, err
	}
	return &engine.Outcome{
		Edits:  []models.Edit{{Op: models.EditCreateLink, LinkTypeID: c.LinkTypeID, LinkID: id, SourceID: src, TargetID: dst}},
		Result: map[string]any{"link_id": id},
	}, nil
}

// Invert implements Kind: delete the link by its id.
func (CreateLink) Invert(ed models.Edit) ([]models.Edit, error) {
	if ed.Op != models.EditCreateLink {
		return nil, fmt.Errorf("create_link cannot invert a %s edit", ed.Op)
	}
	return ed.Inverse()
}
