package executions

import (
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// MayRun reports whether actor may run at as far as its policy can tell
// without a target (nil: yes); the console lists actions with it.
func (s *Service) MayRun(at *engine.ActionType, actor *models.User, guest bool) error {
	return s.eng.MayRun(at, actor, guest)
}
