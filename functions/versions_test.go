package functions

import "testing"

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
