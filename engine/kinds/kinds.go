// Package kinds holds the operation kinds Ontoflow ships, each in a
// package of its own below this folder, and Builtin, their registration.
// The engine core (package engine) knows no kind by name: assembly
// (app/app.go) registers these, swapping in the ones that hold
// dependencies. Adding a kind: a package here and one line in Builtin
// (docs/architecture.md, "Extension points").
package kinds

import (
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds/createlink"
	"github.com/ontoflow/ontoflow/engine/kinds/createobject"
	"github.com/ontoflow/ontoflow/engine/kinds/deleteobject"
	"github.com/ontoflow/ontoflow/engine/kinds/invokefunction"
	"github.com/ontoflow/ontoflow/engine/kinds/invokewebhook"
	"github.com/ontoflow/ontoflow/engine/kinds/updateobject"
)

// Builtin are the operation kinds Ontoflow ships, without their
// dependencies (assembly replaces the webhook and function kinds with ones
// that hold a client, secrets and the function service).
func Builtin() []engine.Kind {
	return []engine.Kind{
		updateobject.UpdateObject{},
		createobject.CreateObject{},
		createlink.CreateLink{},
		deleteobject.DeleteObject{},
		invokefunction.InvokeFunction{},
		invokewebhook.InvokeWebhook{},
	}
}

// Registry is the registry of the built-in kinds with the kinds of with
// put in place of a built-in of the same name, or added.
func Registry(with ...engine.Kind) *engine.Kinds {
	return engine.NewKinds(engine.ReplaceKinds(Builtin(), with...)...)
}
