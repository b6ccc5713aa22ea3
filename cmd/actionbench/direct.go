package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/models"
)

// serveDirect starts the direct-path baseline on loopback: the engine's
// same steps — validate, authorize, run, deliver — called one after
// another from an HTTP handler in this process, without Temporal (how
// OpenFoundry executes actions). It authenticates and records the
// execution row as the API does, so Ontoflow / direct is the price of
// running every execution as a durable workflow. It returns the base URL.
func serveDirect(a *app.App) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex, status, err := directExecute(a, r)
		if err != nil {
			http.Error(w, err.Error(), status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ex)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// directExecute runs POST /direct/{action}/execute.
func directExecute(a *app.App, r *http.Request) (*models.Execution, int, error) {
	ctx := r.Context()
	p, err := a.Auth.Authenticate(r)
	if err != nil {
		return nil, http.StatusUnauthorized, err
	}
	var req struct {
		TargetObjectID string         `json:"target_object_id"`
		Parameters     map[string]any `json:"parameters"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, http.StatusBadRequest, err
	}
	at, err := a.Store.ActionType(ctx, strings.Split(strings.TrimPrefix(r.URL.Path, "/direct/"), "/")[0])
	if err != nil {
		return nil, http.StatusNotFound, err
	}
	id := uuid.NewString()
	ex := &models.Execution{ID: id, Kind: models.KindExecute, WorkflowID: "direct/" + id, ActionTypeID: at.ID,
		ActionTypeName: at.Name, ActionVersion: at.Version, ActorID: p.User.ID, ActorName: p.User.Username,
		TargetObjectID: req.TargetObjectID, Parameters: models.NewNumJSON(req.Parameters), Status: models.StatusQueued}
	if err := execstore.New(a.DB).Create(ctx, ex); err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if err := directSteps(a.Engine, r, id); err != nil {
		_ = a.Engine.RecordFailure(ctx, id, engine.Failure{Code: "refused", Message: err.Error()})
	}
	if err := a.DB.WithContext(ctx).Take(ex, "id = ?", id).Error; err != nil {
		return nil, http.StatusInternalServerError, err
	}
	return ex, http.StatusOK, nil
}

func directSteps(eng *engine.Engine, r *http.Request, id string) error {
	ctx := r.Context()
	p, err := eng.Validate(ctx, id)
	if err != nil {
		return err
	}
	if err := eng.Authorize(ctx, p); err != nil {
		return err
	}
	if _, err := eng.Run(ctx, p, len(p.Deliveries) == 0); err != nil {
		return err
	}
	for i, d := range p.Deliveries {
		if err := eng.Deliver(ctx, id, d.Channel, i == len(p.Deliveries)-1); err != nil {
			return err
		}
	}
	return nil
}
