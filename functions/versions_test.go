package functions

import (
	"context"
	"encoding/json"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// TestPickUpgrade: the highest version with the same major, no
// pre-release, at least the pinned one.
func TestPickUpgrade(t *testing.T) {
	vs := []string{"1.0.0", "1.1.0", "2.0.0", "1.2.0-beta.1", "1.0.1", "0.9.0"}
	for pinned, want := range map[string]string{"1.0.0": "1.1.0", "1.1.0": "1.1.0", "2.0.0": "2.0.0", "1.5.0": "1.5.0"} {
		if got := pickUpgrade(vs, pinned); got != want {
			t.Errorf("from %s: %s, want %s", pinned, got, want)
		}
	}
	for v, ok := range map[string]bool{"1.2.3": true, "1.2.0-beta.1": true, "1.2": false, "v1.2.3": false, "1.2.3+build": false, "01.2.3": false} {
		if canonical(v) != ok {
			t.Errorf("canonical(%q) = %v", v, !ok)
		}
	}
	for v, ok := range map[string]bool{"1.0.0": true, "0.9.0": false, "1.0.0-rc.1": false} {
		if (checkAutoUpgradeFloor(v) == nil) != ok {
			t.Errorf("floor %q: %v", v, !ok)
		}
	}
}

// TestDeleteVersionRefusesUnreadablePin: an invoke_function action type
// whose config cannot be read might pin the version, so the delete is
// refused naming it; an exact pin refuses too, another version's does not.
func TestDeleteVersionRefusesUnreadablePin(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := New(db, Options{})
		actor := &models.User{ID: "u1"}
		if _, err := s.CreatePackage(ctx, actor, PackageSpec{Name: "p", Runtime: "javascript"}); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
			if _, err := s.Publish(ctx, actor, "p", VersionSpec{Version: v, Source: "export default () => 1"}); err != nil {
				t.Fatal(err)
			}
		}
		for name, op := range map[string]string{
			"unreadable": `{"package": "p", "version": 1}`,
			"exact":      `{"package": "p", "version": "1.0.0"}`,
			"other":      `{"package_name": "p", "version": "1.1.0", "auto_upgrade": true}`,
		} {
			at := models.ActionType{ID: name, Name: name, OperationKind: domain.KindInvokeFunction,
				Config: models.NewNumJSON(domain.ActionConfig{Operation: json.RawMessage(op)})}
			if err := db.Create(&at).Error; err != nil {
				t.Fatal(err)
			}
		}
		err := s.DeleteVersion(ctx, "p", "1.1.0")
		e, _ := apperr.As(err)
		if e == nil || e.Code != apperr.DependentsExist || e.Data.(map[string]any)["action_types"].([]string)[0] != "unreadable" {
			t.Fatalf("1.1.0: %v", err)
		}
		if err := s.DeleteVersion(ctx, "p", "1.0.0"); !apperr.Is(err, apperr.DependentsExist) {
			t.Fatalf("1.0.0: %v", err)
		}
		db.Delete(&models.ActionType{ID: "unreadable"})
		if err := s.DeleteVersion(ctx, "p", "1.1.0"); err != nil {
			t.Fatalf("1.1.0 once unpinned: %v", err)
		}
	})
}
