// Package automations holds automation definitions: a trigger (an object
// change or a schedule) and the action it runs as its owner. This file is
// the definitions' store and the checks made when one is saved.
package automations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// Trigger kinds.
const (
	TriggerObject   = "object"
	TriggerSchedule = "schedule"
)

// maxNameLen bounds an automation's name (the column's size).
const maxNameLen = 200

// ActionTypes finds an action type by id or name (ontology.Store does);
// an unknown one is an apperr.ActionTypeNotFound.
type ActionTypes interface {
	ActionType(ctx context.Context, ref string) (*domain.ActionType, error)
}

// Trigger is what fires an automation. Object triggers name an object
// type and the changes (created, updated, deleted); schedule triggers a
// cron expression or an interval.
type Trigger struct {
	Kind       string   `json:"kind"`
	ObjectType string   `json:"object_type,omitempty"`
	On         []string `json:"on,omitempty"`
	Cron       string   `json:"cron,omitempty"`
	Interval   string   `json:"interval,omitempty"`
}

// Spec is an automation as a client writes it.
type Spec struct {
	Name       string            `json:"name"`
	Paused     bool              `json:"paused"`
	Trigger    Trigger           `json:"trigger"`
	ActionType string            `json:"action_type"`
	Parameters map[string]string `json:"parameters"`
}

// View is an automation as the API shows it.
type View struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Owner      string            `json:"owner"`
	Paused     bool              `json:"paused"`
	Trigger    Trigger           `json:"trigger"`
	ActionType string            `json:"action_type"`
	Parameters map[string]string `json:"parameters"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

// Store keeps automation definitions.
type Store struct {
	DB      *gorm.DB
	Actions ActionTypes
	// ObjectTypes resolves an object trigger's type (id or name) to its
	// id, which the dispatcher matches events by; an unknown one is an
	// apperr.ObjectTypeNotFound (nil: the type is kept as written).
	ObjectTypes func(ctx context.Context, ref string) (string, error)
	// Schedules keeps schedule triggers' Temporal Schedules in step with
	// the definitions (nil: none are kept; schedule triggers never fire).
	Schedules Schedules
}

// Create checks sp and stores it as ownerID's automation.
func (s *Store) Create(ctx context.Context, ownerID string, sp Spec) (*View, error) {
	at, typeID, err := s.check(ctx, sp)
	if err != nil {
		return nil, err
	}
	row := models.Automation{ID: uuid.NewString(), OwnerID: ownerID}
	fill(&row, sp, at, typeID)
	err = s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) || isUnique(err) {
				return apperr.New(apperr.Conflict, "name: you already have an automation called %q", sp.Name)
			}
			return fmt.Errorf("store automation %q: %w", sp.Name, err)
		}
		return s.syncSchedule(ctx, &row)
	})
	if err != nil {
		return nil, err
	}
	return viewOf(&row), nil
}

// Get returns ownerID's automation id.
func (s *Store) Get(ctx context.Context, ownerID, id string) (*View, error) {
	row, err := s.load(ctx, ownerID, id)
	if err != nil {
		return nil, err
	}
	return viewOf(row), nil
}

// List returns ownerID's automations by name.
func (s *Store) List(ctx context.Context, ownerID string) ([]View, error) {
	var rows []models.Automation
	if err := s.DB.WithContext(ctx).Where("owner_id = ?", ownerID).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list automations of %s: %w", ownerID, err)
	}
	out := make([]View, 0, len(rows))
	for i := range rows {
		out = append(out, *viewOf(&rows[i]))
	}
	return out, nil
}

// Update replaces ownerID's automation id with sp (checked first; nothing
// is changed when the check fails).
func (s *Store) Update(ctx context.Context, ownerID, id string, sp Spec) (*View, error) {
	at, typeID, err := s.check(ctx, sp)
	if err != nil {
		return nil, err
	}
	row, err := s.load(ctx, ownerID, id)
	if err != nil {
		return nil, err
	}
	wasSchedule := row.TriggerKind == TriggerSchedule
	fill(row, sp, at, typeID)
	err = s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Save(row).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) || isUnique(err) {
				return apperr.New(apperr.Conflict, "name: you already have an automation called %q", sp.Name)
			}
			return fmt.Errorf("update automation %s: %w", id, err)
		}
		if wasSchedule && row.TriggerKind != TriggerSchedule {
			return s.deleteSchedule(ctx, row.ID)
		}
		return s.syncSchedule(ctx, row)
	})
	if err != nil {
		return nil, err
	}
	return viewOf(row), nil
}

// SetPaused pauses or resumes ownerID's automation id.
func (s *Store) SetPaused(ctx context.Context, ownerID, id string, paused bool) (*View, error) {
	row, err := s.load(ctx, ownerID, id)
	if err != nil {
		return nil, err
	}
	row.Paused = paused
	err = s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(row).Update("paused", paused).Error; err != nil {
			return fmt.Errorf("pause automation %s: %w", id, err)
		}
		return s.syncSchedule(ctx, row)
	})
	if err != nil {
		return nil, err
	}
	return viewOf(row), nil
}

// Delete removes ownerID's automation id.
func (s *Store) Delete(ctx context.Context, ownerID, id string) error {
	row, err := s.load(ctx, ownerID, id)
	if err != nil {
		return err
	}
	return s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Where("id = ? AND owner_id = ?", id, ownerID).Delete(&models.Automation{})
		if res.Error != nil {
			return fmt.Errorf("delete automation %s: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return notFound(id)
		}
		if row.TriggerKind == TriggerSchedule {
			return s.deleteSchedule(ctx, id)
		}
		return nil
	})
}

func (s *Store) load(ctx context.Context, ownerID, id string) (*models.Automation, error) {
	var row models.Automation
	err := s.DB.WithContext(ctx).Take(&row, "id = ? AND owner_id = ?", id, ownerID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read automation %s: %w", id, err)
	}
	return &row, nil
}

// notFound hides another owner's automation behind the same answer as a
// missing one.
func notFound(id string) error {
	return apperr.New(apperr.NotFound, "automation %q not found", id)
}

func isUnique(err error) bool {
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "unique") || strings.Contains(m, "duplicate key")
}

func fill(row *models.Automation, sp Spec, at *domain.ActionType, typeID string) {
	row.Name = strings.TrimSpace(sp.Name)
	row.Paused = sp.Paused
	row.TriggerKind = sp.Trigger.Kind
	settings := triggerSettings(sp.Trigger)
	if typeID != "" {
		settings["object_type_id"] = typeID
	}
	row.Trigger = models.NewJSON(settings)
	row.ActionType = at.ID
	row.Parameters = models.NewJSON(sp.Parameters)
}

func triggerSettings(t Trigger) map[string]any {
	m := map[string]any{}
	if t.ObjectType != "" {
		m["object_type"] = t.ObjectType
	}
	if len(t.On) > 0 {
		m["on"] = t.On
	}
	if t.Cron != "" {
		m["cron"] = t.Cron
	}
	if t.Interval != "" {
		m["interval"] = t.Interval
	}
	return m
}

func viewOf(row *models.Automation) *View {
	t := Trigger{Kind: row.TriggerKind}
	m := row.Trigger.V
	t.ObjectType, _ = m["object_type"].(string)
	t.Cron, _ = m["cron"].(string)
	t.Interval, _ = m["interval"].(string)
	if on, ok := m["on"].([]any); ok {
		for _, v := range on {
			if s, ok := v.(string); ok {
				t.On = append(t.On, s)
			}
		}
	} else if on, ok := m["on"].([]string); ok {
		t.On = on
	}
	params := row.Parameters.V
	if params == nil {
		params = map[string]string{}
	}
	return &View{ID: row.ID, Name: row.Name, Owner: row.OwnerID, Paused: row.Paused, Trigger: t,
		ActionType: row.ActionType, Parameters: params, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}
}

// check validates sp and returns its action type and its object
// trigger's type id ("" for another trigger or without ObjectTypes); the
// first fault is a 400 naming the member.
func (s *Store) check(ctx context.Context, sp Spec) (*domain.ActionType, string, error) {
	name := strings.TrimSpace(sp.Name)
	if name == "" {
		return nil, "", apperr.New(apperr.InvalidArgument, "name: required")
	}
	if len(name) > maxNameLen {
		return nil, "", apperr.OverLimit("name", maxNameLen, "characters", len(name))
	}
	if err := checkTrigger(sp.Trigger); err != nil {
		return nil, "", err
	}
	typeID, err := s.objectTypeID(ctx, sp.Trigger)
	if err != nil {
		return nil, "", err
	}
	if sp.ActionType == "" {
		return nil, "", apperr.New(apperr.InvalidArgument, "action_type: required")
	}
	at, err := s.Actions.ActionType(ctx, sp.ActionType)
	if err != nil {
		if apperr.CodeOf(err) == apperr.ActionTypeNotFound || apperr.CodeOf(err) == apperr.NotFound {
			return nil, "", apperr.New(apperr.InvalidArgument, "action_type: no action type %q", sp.ActionType)
		}
		return nil, "", fmt.Errorf("check automation action type %q: %w", sp.ActionType, err)
	}
	if err := checkParameters(at, sp.Parameters); err != nil {
		return nil, "", err
	}
	return at, typeID, nil
}

// objectTypeID resolves an object trigger's type to its id.
func (s *Store) objectTypeID(ctx context.Context, t Trigger) (string, error) {
	if t.Kind != TriggerObject || s.ObjectTypes == nil {
		return "", nil
	}
	id, err := s.ObjectTypes(ctx, t.ObjectType)
	if err != nil {
		if c := apperr.CodeOf(err); c == apperr.ObjectTypeNotFound || c == apperr.NotFound {
			return "", apperr.New(apperr.InvalidArgument, "trigger.object_type: no object type %q", t.ObjectType)
		}
		return "", fmt.Errorf("check automation object type %q: %w", t.ObjectType, err)
	}
	return id, nil
}

var objectChanges = []string{"created", "updated", "deleted"}

func checkTrigger(t Trigger) error {
	switch t.Kind {
	case TriggerObject:
		if t.ObjectType == "" {
			return apperr.New(apperr.InvalidArgument, "trigger.object_type: required for an object trigger")
		}
		if len(t.On) == 0 {
			return apperr.New(apperr.InvalidArgument, "trigger.on: name at least one of %s", strings.Join(objectChanges, ", "))
		}
		for _, on := range t.On {
			if !contains(objectChanges, on) {
				return apperr.New(apperr.InvalidArgument, "trigger.on: %q is not one of %s", on, strings.Join(objectChanges, ", "))
			}
		}
		if t.Cron != "" || t.Interval != "" {
			return apperr.New(apperr.InvalidArgument, "trigger: an object trigger takes no cron or interval")
		}
	case TriggerSchedule:
		return checkSchedule(t)
	case "":
		return apperr.New(apperr.InvalidArgument, "trigger.kind: required (object or schedule)")
	default:
		return apperr.New(apperr.InvalidArgument, "trigger.kind: %q is not object or schedule", t.Kind)
	}
	return nil
}

func checkSchedule(t Trigger) error {
	if (t.Cron == "") == (t.Interval == "") {
		return apperr.New(apperr.InvalidArgument, "trigger: a schedule trigger takes exactly one of cron and interval")
	}
	if t.Cron != "" {
		if _, err := cron.ParseStandard(t.Cron); err != nil {
			return apperr.New(apperr.InvalidArgument, "trigger.cron: %q does not parse: %v", t.Cron, err)
		}
		return nil
	}
	d, err := time.ParseDuration(t.Interval)
	if err != nil || d < time.Minute {
		return apperr.New(apperr.InvalidArgument, "trigger.interval: %q is not a duration of at least 1m", t.Interval)
	}
	return nil
}

// checkParameters refuses a mapping to an input the action lacks and an
// action input that is required, has no default and is not mapped.
func checkParameters(at *domain.ActionType, params map[string]string) error {
	for name := range params {
		if _, ok := at.Input(name); !ok {
			return apperr.New(apperr.InvalidArgument, "parameters.%s: action %s has no such input", name, at.Name)
		}
	}
	for _, in := range at.Inputs {
		if in.Required && in.DefaultValue == nil && strings.TrimSpace(params[in.Name]) == "" {
			return apperr.New(apperr.InvalidArgument, "parameters.%s: required input of %s is not mapped", in.Name, at.Name)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
