package engine

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/telemetry"
)

// Label caps: action type names and error codes are kept up to these many
// distinct values, later ones are counted as "other" (telemetry.Other).
const (
	MaxActionTypeLabels = 200
	maxErrorCodeLabels  = 64
)

type metrics struct {
	executions *prometheus.CounterVec
	failures   *prometheus.CounterVec
	steps      *prometheus.HistogramVec
	batchItems *prometheus.CounterVec
	reverts    *prometheus.CounterVec

	webhookRequests *prometheus.CounterVec
	webhookDuration *prometheus.HistogramVec
	webhookCalls    *prometheus.CounterVec
	webhookAttempts *prometheus.HistogramVec

	notifications *prometheus.CounterVec
	recipients    *prometheus.CounterVec
	deliverySteps *prometheus.HistogramVec

	actionTypes *telemetry.CappedLabel
	codes       *telemetry.CappedLabel
}

// attemptBuckets count attempts (1, 2, 3, 5, 10: the largest
// max_attempts).
var attemptBuckets = []float64{1, 2, 3, 5, 10}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_action_executions_total",
			Help: "Finished action executions by action type (the first 200 names, then other), kind and status.",
		}, []string{"action_type", "kind", "status"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_action_failures_total",
			Help: "Failed action executions by action type and error code (both capped, then other).",
		}, []string{"action_type", "code"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ontoflow_action_step_duration_seconds",
			Help:    "Latency of the engine's steps (validate, authorize, effect, run, notify, revert).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"step"}),
		batchItems: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_batch_items_total",
			Help: "Finished batch items by outcome (succeeded, failed).",
		}, []string{"outcome"}),
		reverts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_reverts_total",
			Help: "Finished reverts by outcome (succeeded, conflict: something changed since, failed).",
		}, []string{"outcome"}),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_webhook_requests_total",
			Help: "Webhook attempts by the answer's status class (2xx ... 5xx; error: no answer).",
		}, []string{"status_class"}),
		webhookDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ontoflow_webhook_request_duration_seconds",
			Help:    "Time to a webhook's answer (headers) per attempt, by status class.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"status_class"}),
		webhookCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_webhook_calls_total",
			Help: "Settled webhook calls (after their last attempt) by outcome (succeeded, failed).",
		}, []string{"outcome"}),
		webhookAttempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ontoflow_webhook_call_attempts",
			Help:    "Attempts a settled webhook call took, by outcome.",
			Buckets: attemptBuckets,
		}, []string{"outcome"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_notifications_total",
			Help: "Recorded notification side effects by channel and outcome (delivered, failed, skipped).",
		}, []string{"channel", "outcome"}),
		recipients: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_notification_recipients_total",
			Help: "Messages to recipients by channel and outcome.",
		}, []string{"channel", "outcome"}),
		deliverySteps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ontoflow_notification_delivery_attempts",
			Help:    "Attempts a channel's delivery step took until its outcomes were recorded, by channel.",
			Buckets: attemptBuckets,
		}, []string{"channel"}),
		actionTypes: telemetry.NewCappedLabel(MaxActionTypeLabels),
		codes:       telemetry.NewCappedLabel(maxErrorCodeLabels),
	}
	reg.MustRegister(m.executions, m.failures, m.steps, m.batchItems, m.reverts,
		m.webhookRequests, m.webhookDuration, m.webhookCalls, m.webhookAttempts,
		m.notifications, m.recipients, m.deliverySteps)
	return m
}

func (e *Engine) observe(step string, start time.Time) {
	e.metrics.steps.WithLabelValues(step).Observe(time.Since(start).Seconds())
}

// finished counts a finished execution: by action type, kind and status,
// a failure by its code, a batch item and a revert by outcome.
func (e *Engine) finished(ex *models.Execution, status string) {
	m := e.metrics
	at := m.actionTypes.Value(ex.ActionTypeName)
	m.executions.WithLabelValues(at, ex.Kind, status).Inc()
	if status == models.StatusFailed {
		m.failures.WithLabelValues(at, m.codes.Value(ex.ErrorCode)).Inc()
	}
	switch ex.Kind {
	case models.KindBatchItem:
		m.batchItems.WithLabelValues(status).Inc()
	case models.KindRevert:
		outcome := status
		if status == models.StatusFailed && ex.ErrorCode == string(apperr.Conflict) {
			outcome = "conflict"
		}
		m.reverts.WithLabelValues(outcome).Inc()
	}
}

// channelLabel is a channel's name when this process has it, else other
// (a definition may name a channel no process implements).
func (e *Engine) channelLabel(name string) string {
	if _, ok := e.channels[name]; ok {
		return name
	}
	return telemetry.Other
}

// delivered counts the outcomes a delivery step recorded on attempt.
func (e *Engine) delivered(ctx context.Context, channel string, outcomes []models.NotificationOutcome) {
	m, ch := e.metrics, e.channelLabel(channel)
	for _, o := range outcomes {
		m.notifications.WithLabelValues(ch, outcomeLabel(o.Status)).Inc()
		if len(o.Deliveries) == 0 {
			// In-app: delivered in the transaction, to all its recipients.
			m.recipients.WithLabelValues(ch, outcomeLabel(o.Status)).Add(float64(o.Recipients))
		}
		for _, r := range o.Deliveries {
			m.recipients.WithLabelValues(ch, outcomeLabel(r.Status)).Inc()
		}
	}
	if len(outcomes) > 0 {
		m.deliverySteps.WithLabelValues(ch).Observe(float64(Attempt(ctx)))
	}
}

func outcomeLabel(status string) string {
	switch status {
	case Delivered, Failed, Skipped:
		return status
	}
	return telemetry.Other
}

type metricsKey struct{}

// withMetrics gives an effect the engine's metrics (kinds are values
// without them).
func withMetrics(ctx context.Context, m *metrics) context.Context {
	return context.WithValue(ctx, metricsKey{}, m)
}

// WebhookAnswered counts one webhook attempt in the engine's metrics (the
// effect step puts them in ctx): status 0 is no answer.
func WebhookAnswered(ctx context.Context, status int, d time.Duration) {
	m, ok := ctx.Value(metricsKey{}).(*metrics)
	if !ok {
		return
	}
	class := "error"
	if status != 0 {
		class = telemetry.StatusClass(status)
	}
	m.webhookRequests.WithLabelValues(class).Inc()
	m.webhookDuration.WithLabelValues(class).Observe(d.Seconds())
}

// WebhookSettled counts, in the engine's metrics (the effect step puts
// them in ctx), a webhook call whose attempt ended with err when no attempt
// follows (err is not a RetryLater).
func WebhookSettled(ctx context.Context, err error) {
	m, ok := ctx.Value(metricsKey{}).(*metrics)
	if !ok {
		return
	}
	var later *RetryLater
	if errors.As(err, &later) {
		return
	}
	outcome := models.StatusSucceeded
	if err != nil {
		outcome = models.StatusFailed
	}
	m.webhookCalls.WithLabelValues(outcome).Inc()
	m.webhookAttempts.WithLabelValues(outcome).Observe(float64(Attempt(ctx)))
}
