package invokefunction_test

import (
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
)

// The engine these tests run functions on is internal/harness/enginetest's
// (the built-in kinds over a real ontology store; NewFunctions for one
// whose functions run).

var admin = enginetest.Admin
