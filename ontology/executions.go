package ontology

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
)

// The action log and the read rule.
//
// An execution row carries object data: its parameters and justification,
// and the before/after values of its edits. A caller sees those only for
// an execution whose objects it may read now, by the same rule as the
// objects themselves (auth.ReadScope): the target, every object an edit
// names (updated, created, deleted, a link's two ends) and, for a batch,
// the targets of all its items. An object that no longer exists (deleted,
// or an id that never named one) has no marking left to judge by: it counts
// as readable to the execution's actor, who was allowed to read it when
// it ran (the engine checks that before anything else), and to nobody else
// but admins.
//
// Rows are redacted, not filtered: the row stays (id, kind, action type,
// actor, status, error code, timestamps: the audit trail of who ran what
// when), and everything that came from or went into an object the caller
// may not read is blanked and the row marked "redacted". Filtering would
// make pages short or empty, break offset page tokens, and tell by the gap
// that something was hidden; redaction keeps paging exactly as it was.

// RedactExecutions blanks, in place, the object data of every row of a
// page that p may not read in full (see above). It fails closed: when the
// objects cannot be looked up, every row is redacted (and the error
// logged), so callers need not handle an error.
func (s *Store) RedactExecutions(ctx context.Context, p *auth.Principal, rows []models.Execution) {
	ptrs := make([]*models.Execution, len(rows))
	for i := range rows {
		ptrs[i] = &rows[i]
	}
	s.redact(ctx, p, ptrs)
}

// RedactExecution is RedactExecutions for one row.
func (s *Store) RedactExecution(ctx context.Context, p *auth.Principal, ex *models.Execution) {
	s.redact(ctx, p, []*models.Execution{ex})
}

func (s *Store) redact(ctx context.Context, p *auth.Principal, rows []*models.Execution) {
	if len(rows) == 0 {
		return
	}
	var u *models.User
	if p != nil {
		u = p.User
	}
	sc := s.levels.ReadScope(u)
	if sc.All {
		return
	}
	ok, err := s.executionsReadable(ctx, u, sc, rows)
	if err != nil {
		slog.ErrorContext(ctx, "judge executions against the read rule; redacting the page", "err", err)
	}
	for _, ex := range rows {
		if err != nil || !ok[ex.ID] {
			redactExecution(ex)
		}
	}
}

// executionsReadable reports, by execution id, whether u may read every
// object each row names.
func (s *Store) executionsReadable(ctx context.Context, u *models.User, sc auth.ReadScope, rows []*models.Execution) (map[string]bool, error) {
	ids := map[string]bool{}
	var batches []string
	for _, ex := range rows {
		for _, id := range namedObjects(ex) {
			ids[id] = true
		}
		if ex.Kind == models.KindBatch {
			batches = append(batches, ex.ID)
		}
	}
	readable, err := s.objectsReadable(ctx, sc, sortedKeys(ids))
	if err != nil {
		return nil, err
	}
	hiddenBatch, err := s.batchesWithHiddenItems(ctx, u, sc, batches)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, ex := range rows {
		ok := !hiddenBatch[ex.ID]
		own := u != nil && ex.ActorID == u.ID
		for _, id := range namedObjects(ex) {
			r, exists := readable[id]
			// A target the engine refused to load is only the id the actor
			// typed: to them it reads as a missing id does, or redacting
			// it would tell an unreadable object from a missing one.
			ok = ok && (r || (!exists || refusedTarget(ex)) && own)
		}
		out[ex.ID] = ok
	}
	return out, nil
}

// idChunk bounds the ids of one IN list: a function's run names up to
// 5,000 objects, a page many runs, and both databases cap bound
// parameters.
const idChunk = 500

// objectsReadable maps each of ids that exists to whether sc may read it;
// an id absent from the map is gone.
func (s *Store) objectsReadable(ctx context.Context, sc auth.ReadScope, ids []string) (map[string]bool, error) {
	readable := map[string]bool{}
	for start := 0; start < len(ids); start += idChunk {
		var objs []models.Object
		chunk := ids[start:min(start+idChunk, len(ids))]
		if err := s.db.WithContext(ctx).Select("id", "marking", "organization").Where("id IN ?", chunk).Find(&objs).Error; err != nil {
			return nil, fmt.Errorf("load the objects of executions: %w", err)
		}
		for _, o := range objs {
			readable[o.ID] = sc.Allows(o.Marking, o.Organization)
		}
	}
	return readable, nil
}

// NamedRecord is a record of something an actor did that names objects
// (a function's run: its target and what it read).
type NamedRecord struct {
	ActorID string
	Objects []string
}

// ReadableRecords reports, per record, whether u may read every object it
// names, by the action log's rule: an object that no longer exists counts
// as readable to the record's actor only (admins read everything).
func (s *Store) ReadableRecords(ctx context.Context, u *models.User, recs []NamedRecord) ([]bool, error) {
	sc := s.levels.ReadScope(u)
	out := make([]bool, len(recs))
	ids := map[string]bool{}
	for _, r := range recs {
		for _, id := range r.Objects {
			ids[id] = true
		}
	}
	readable := map[string]bool{}
	if !sc.All {
		var err error
		if readable, err = s.objectsReadable(ctx, sc, sortedKeys(ids)); err != nil {
			return nil, err
		}
	}
	for i, r := range recs {
		out[i] = true
		for _, id := range r.Objects {
			ok, exists := readable[id]
			out[i] = out[i] && (sc.All || ok || !exists && u != nil && r.ActorID == u.ID)
		}
	}
	return out, nil
}

// batchesWithHiddenItems returns the batches among ids that have an item
// whose target u may not read (or that is gone and u did not run it):
// one query with the read rule's SQL form, however many items.
func (s *Store) batchesWithHiddenItems(ctx context.Context, u *models.User, sc auth.ReadScope, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	cond, args := sc.SQL("o")
	actor := ""
	if u != nil {
		actor = u.ID
	}
	var hidden []string
	err := s.db.WithContext(ctx).Table("executions AS e").
		Joins("LEFT JOIN objects o ON o.id = e.target_object_id").
		Where("e.batch_id IN ? AND e.target_object_id <> ''", ids).
		// An item whose target the engine refused to load is, to its own
		// actor, only the id they typed: judged as a missing id is (as
		// refusedTarget judges a single execution), or the batch would be
		// redacted for an unreadable target and shown for a missing one.
		Where("(o.id IS NULL AND e.actor_id <> ?) OR (o.id IS NOT NULL AND NOT "+cond+
			" AND NOT (e.actor_id = ? AND e.status = ? AND e.error_code = ?))",
			append(append([]any{actor}, args...), actor, models.StatusFailed, string(apperr.ObjectNotFound))...).
		Distinct("e.batch_id").Pluck("e.batch_id", &hidden).Error
	if err != nil {
		return nil, fmt.Errorf("judge batch items: %w", err)
	}
	for _, id := range hidden {
		out[id] = true
	}
	return out, nil
}

// refusedTarget: ex failed because its target could not be loaded (missing
// or unreadable, answered alike) and holds nothing read from an object.
func refusedTarget(ex *models.Execution) bool {
	return ex.Status == models.StatusFailed && ex.ErrorCode == string(apperr.ObjectNotFound) &&
		len(ex.Edits.V) == 0 && len(ex.Result.V) == 0
}

// namedObjects are the object ids an execution row names.
func namedObjects(ex *models.Execution) []string {
	var ids []string
	if ex.TargetObjectID != "" {
		ids = append(ids, ex.TargetObjectID)
	}
	return append(append(ids, EditObjects(ex.Edits.V)...), functionReads(ex)...)
}

// EditObjects are the object ids edits name: each edit's object, a link's
// two ends, and the ends of every link a delete removed with its object
// (those far ends may be objects the actor could never read: the engine
// deletes every link of a deleted object, and records them for revert).
func EditObjects(edits []models.Edit) []string {
	var ids []string
	add := func(xs ...string) {
		for _, id := range xs {
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	for _, e := range edits {
		add(e.ObjectID, e.SourceID, e.TargetID)
		for _, l := range e.Links {
			add(l.SourceID, l.TargetID)
		}
	}
	return ids
}

// functionReads are the objects an invoke_function execution's function
// read (operation_result.function.reads): its console and result may
// quote them.
func functionReads(ex *models.Execution) []string {
	f, _ := ex.Result.V["function"].(map[string]any)
	switch v := f["reads"].(type) {
	case []string: // as the engine recorded it, before a round trip
		return v
	case []any:
		ids := make([]string, 0, len(v))
		for _, id := range v {
			if s, ok := id.(string); ok && s != "" {
				ids = append(ids, s)
			}
		}
		return ids
	}
	return nil
}

// redactExecution blanks what of ex came from or went into objects: the
// target's id, parameters, justification, edits, the operation's result
// and the error's message and details (they may quote values). The code
// of an error stays: it is the outcome, not the data.
func redactExecution(ex *models.Execution) {
	ex.TargetObjectID = ""
	ex.Parameters = models.NumJSON[map[string]any]{}
	ex.Justification = ""
	ex.Edits = models.NumJSON[[]models.Edit]{}
	ex.Result = models.JSON[map[string]any]{}
	ex.ErrorMessage = ""
	ex.ErrorDetails = models.JSON[any]{}
	ex.Redacted = true
}
