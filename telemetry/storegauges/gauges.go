// Package storegauges reports gauges of what the database holds (open
// branches, WebDAV locks). It sits with the stores, above telemetry, as
// it reads their rows.
package storegauges

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// storeGauges reports counts the database holds, read on each scrape by
// an indexed count (branches by expires_at, locks by expires) bounded by
// a timeout: a gauge kept in memory would be wrong as soon as a second
// process (or an expiry) changed the rows.
type storeGauges struct {
	db              *gorm.DB
	log             *slog.Logger
	branches, locks *prometheus.Desc
}

// Register registers ontoflow_branches_open (what-if branches
// not yet expired) and ontoflow_webdav_locks (WebDAV locks not yet
// lapsed) on reg, read from db.
func Register(reg prometheus.Registerer, db *gorm.DB, log *slog.Logger) {
	reg.MustRegister(&storeGauges{db: db, log: log,
		branches: prometheus.NewDesc("ontoflow_branches_open", "What-if branches open (not expired).", nil, nil),
		locks:    prometheus.NewDesc("ontoflow_webdav_locks", "WebDAV locks held (not lapsed).", nil, nil),
	})
}

func (g *storeGauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.branches; ch <- g.locks }

func (g *storeGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	now := time.Now().UTC()
	g.count(ctx, ch, g.branches, g.db.WithContext(ctx).Model(&models.Branch{}).Where("expires_at > ?", now))
	g.count(ctx, ch, g.locks, g.db.WithContext(ctx).Model(&models.DavLock{}).Where("expires > ?", now.Unix()))
}

// count reports q's count as d; a failed count leaves the series out of
// this scrape rather than report a wrong zero.
func (g *storeGauges) count(ctx context.Context, ch chan<- prometheus.Metric, d *prometheus.Desc, q *gorm.DB) {
	var n int64
	if err := q.Count(&n).Error; err != nil {
		g.log.WarnContext(ctx, "count for a metric", "metric", d.String(), "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n))
}
