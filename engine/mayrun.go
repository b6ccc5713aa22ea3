package engine

import "github.com/ontoflow/ontoflow/models"

// MayRun checks the parts of at's policy that do not depend on a target
// (disabled actor, guest sessions, permission keys, roles, attributes,
// clearance): the console lists only actions that pass. The target's
// marking and the justification are judged when the action runs.
func (e *Engine) MayRun(at *ActionType, actor *models.User, guest bool) error {
	return e.authorize(&input{Request: Request{Action: at, Actor: actor, Guest: guest}}, false)
}
