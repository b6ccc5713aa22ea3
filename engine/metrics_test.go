package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/telemetry"
)

// engineSeries are the engine's series on reg (names and labels) and the
// size of their text exposition.
func engineSeries(t *testing.T, reg *prometheus.Registry) (map[string]bool, int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]bool{}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			series[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = true
		}
	}
	return series, buf.Len()
}

// TestMetricsLabelsAreBounded: invented action type names, error codes,
// channels and webhook statuses do not grow /metrics without end: action
// types and codes keep their names up to a cap, then count as other;
// channels a process does not have are other; statuses are classes.
func TestMetricsLabelsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := New(Deps{Registerer: reg})
	ctx := withMetrics(WithAttempt(context.Background(), 2), e.metrics)
	traffic := func(round int) {
		for i := 0; i < 150; i++ {
			name := fmt.Sprintf("action-%d-%d", round, i)
			e.finished(&models.Execution{ActionTypeName: name, Kind: models.KindExecute}, models.StatusSucceeded)
			e.finished(&models.Execution{ActionTypeName: name, Kind: models.KindBatchItem, ErrorCode: "Code" + name}, models.StatusFailed)
			e.finished(&models.Execution{ActionTypeName: name, Kind: models.KindRevert, ErrorCode: "Conflict"}, models.StatusFailed)
			e.delivered(ctx, "pigeon-"+name, []models.NotificationOutcome{{Status: "lost-" + name}})
			e.delivered(ctx, "in_app", []models.NotificationOutcome{{Status: Delivered}})
			WebhookAnswered(ctx, 100+i*7+round, 0)
		}
		WebhookAnswered(ctx, 0, 0)
		WebhookSettled(ctx, nil)
		WebhookSettled(ctx, &RetryLater{Err: fmt.Errorf("later")})
	}
	traffic(0)
	traffic(1)
	before, sizeBefore := engineSeries(t, reg)
	traffic(2)
	traffic(3)
	after, sizeAfter := engineSeries(t, reg)
	for s := range after {
		if !before[s] {
			t.Errorf("new traffic added the series %s", s)
			break
		}
	}
	if sizeAfter > sizeBefore+512 {
		t.Errorf("metrics grew from %d to %d bytes", sizeBefore, sizeAfter)
	}
	for _, want := range []string{
		"ontoflow_action_executions_total{action_type=action-0-0,kind=execute,status=succeeded}",
		"ontoflow_action_executions_total{action_type=other,kind=execute,status=succeeded}",
		"ontoflow_action_failures_total{action_type=other,code=other}",
		"ontoflow_batch_items_total{outcome=failed}",
		"ontoflow_reverts_total{outcome=conflict}",
		"ontoflow_notifications_total{channel=other,outcome=other}",
		"ontoflow_notifications_total{channel=in_app,outcome=delivered}",
		"ontoflow_webhook_requests_total{status_class=error}",
		"ontoflow_webhook_requests_total{status_class=5xx}",
		"ontoflow_webhook_requests_total{status_class=other}",
		"ontoflow_webhook_calls_total{outcome=succeeded}",
	} {
		if !after[want] {
			t.Errorf("no series %s", want)
		}
	}
	n := 0
	for s := range after {
		if strings.HasPrefix(s, "ontoflow_action_executions_total{") {
			n++
		}
		if strings.Contains(s, "pigeon") || strings.Contains(s, "lost-") || strings.Contains(s, "=999") {
			t.Errorf("unbounded label in %s", s)
		}
	}
	// Three kinds per name: execute, batch-item and revert.
	if max := 3 * (MaxActionTypeLabels + 1); n > max {
		t.Errorf("%d execution series, more than %d", n, max)
	}
	if telemetry.StatusClass(204) != "2xx" {
		t.Errorf("status class of 204: %s", telemetry.StatusClass(204))
	}
}
