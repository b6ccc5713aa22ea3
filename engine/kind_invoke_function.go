package engine

import (
	"context"
	"fmt"

	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology/domain"
)

// InvokeFunction is the invoke_function kind. This release checks its
// definition only: running it answers 422 OperationNotSupported. The
// function issue builds it (the run as its own step before the
// transaction, its returned edits applied by Apply).
type InvokeFunction struct{}

// functionConfig is invoke_function's operation config.
type functionConfig struct {
	domain.FunctionRef
}

// Name implements domain.OperationKind.
func (InvokeFunction) Name() string { return domain.KindInvokeFunction }

// NeedsObjectType implements domain.OperationKind: optional.
func (InvokeFunction) NeedsObjectType() bool { return false }

// HasTarget implements domain.OperationKind: when it names an object type.
func (InvokeFunction) HasTarget(objectTypeID string) bool { return objectTypeID != "" }

// NewConfig implements domain.OperationKind.
func (InvokeFunction) NewConfig() any { return &functionConfig{} }

// CheckConfig implements domain.OperationKind.
func (InvokeFunction) CheckConfig(s *domain.KindScope, cfg any) error {
	return domain.CheckFunctionRef(s.Field, cfg.(*functionConfig).FunctionRef)
}

// References implements domain.OperationKind.
func (InvokeFunction) References(any) domain.References { return domain.References{} }

// Preview implements Kind: nothing is known before the run.
func (InvokeFunction) Preview(context.Context, *Op) ([]models.Edit, error) { return nil, nil }

// Apply implements Kind: not available in this release.
func (InvokeFunction) Apply(context.Context, *Op) (*Outcome, error) {
	return nil, notSupported(domain.KindInvokeFunction)
}

// Invert implements Kind: no edits are recorded yet.
func (InvokeFunction) Invert(ed models.Edit) ([]models.Edit, error) {
	return nil, fmt.Errorf("invoke_function records no edit to invert (got %s)", ed.Op)
}
