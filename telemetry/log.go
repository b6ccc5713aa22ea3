package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// traceHandler adds to the records logged with a context (slog's *Context
// calls) the trace and span ids of the context's span, and the execution
// and workflow ids the context names (WithExecution), so that a log line
// leads to its trace, its execution record and its Temporal history.
type traceHandler struct{ slog.Handler }

// LogHandler wraps h so that lines logged in a traced context carry
// trace_id and span_id, and lines logged during an execution carry
// execution_id and workflow_id.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if ex, ok := ctx.Value(executionKey{}).(execution); ok {
		r.AddAttrs(slog.String("execution_id", ex.id))
		if ex.workflowID != "" {
			r.AddAttrs(slog.String("workflow_id", ex.workflowID))
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

type executionKey struct{}

type execution struct{ id, workflowID string }

// WithExecution names the execution (and the workflow running it, when
// known) whose work ctx carries, for LogHandler to put on every line
// logged with it; the caller sets it once per step rather than each log
// call repeating the ids. The trace id comes from the context's span,
// which is the trace the execution record names (its trace_id).
func WithExecution(ctx context.Context, executionID, workflowID string) context.Context {
	if executionID == "" {
		return ctx
	}
	return context.WithValue(ctx, executionKey{}, execution{executionID, workflowID})
}
