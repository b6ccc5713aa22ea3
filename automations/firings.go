package automations

import (
	"context"
	"fmt"
	"time"

	"github.com/ontoflow/ontoflow/models"
)

// FiringView is one firing as the API shows it.
type FiringView struct {
	ID          uint64    `json:"id"`
	EventSeq    uint64    `json:"event_seq,omitempty"`
	Key         string    `json:"key"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason,omitempty"`
	ExecutionID *string   `json:"execution_id,omitempty"`
	Depth       int       `json:"depth"`
	CreatedAt   time.Time `json:"created_at"`
}

// maxFirings bounds one page of firings.
const maxFirings = 500

// Firings lists ownerID's automation id's firings, newest first, at most
// limit (1..500; 0: 100).
func (s *Store) Firings(ctx context.Context, ownerID, id string, limit int) ([]FiringView, error) {
	if _, err := s.load(ctx, ownerID, id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, maxFirings)
	var rows []models.AutomationFiring
	if err := s.DB.WithContext(ctx).Where("automation_id = ?", id).Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list firings of automation %s: %w", id, err)
	}
	out := make([]FiringView, 0, len(rows))
	for _, f := range rows {
		out = append(out, FiringView{ID: f.ID, EventSeq: f.EventSeq, Key: f.Key, Status: f.Status, Reason: f.Reason,
			ExecutionID: f.ExecutionID, Depth: f.Depth, CreatedAt: f.CreatedAt})
	}
	return out, nil
}
