package storegauges_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/telemetry/storegauges"
)

// The gauges count what is open now: an expired branch and a lapsed lock
// are not counted.
func TestStoreGaugesCountOpenBranchesAndLocks(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Now().UTC()
		for i, exp := range []time.Time{now.Add(time.Hour), now.Add(2 * time.Hour), now.Add(-time.Minute)} {
			b := models.Branch{ID: string(rune('a'+i)) + "-branch", OwnerID: "u", Status: "open", ExpiresAt: exp}
			if err := db.Create(&b).Error; err != nil {
				t.Fatal(err)
			}
		}
		for i, exp := range []time.Time{now.Add(time.Hour), now.Add(-time.Second)} {
			l := models.DavLock{Token: string(rune('a'+i)) + "-lock", UserID: "u", Path: "/f", Expires: exp.Unix()}
			if err := db.Create(&l).Error; err != nil {
				t.Fatal(err)
			}
		}
		reg := prometheus.NewRegistry()
		storegauges.Register(reg, db, slog.Default())
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			got[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
		}
		if got["ontoflow_branches_open"] != 2 || got["ontoflow_webdav_locks"] != 1 || len(got) != 2 {
			t.Errorf("gauges %v, want 2 open branches and 1 lock", got)
		}
	})
}
