package telemetry

import (
	"log/slog"

	sdklog "go.temporal.io/sdk/log"
)

// sdkLogger is the Temporal SDK's logger over slog, naming on each line
// the execution whose workflow it concerns. The SDK tags its workflow and
// activity lines with "WorkflowID" (through With, or in the call itself)
// but knows nothing of executions; a line that names a workflow of an
// execution gets execution_id and workflow_id, the keys of the engine's
// own lines (LogHandler), so one search finds every line of an execution.
type sdkLogger struct {
	inner       sdklog.Logger
	executionOf func(workflowID string) string
}

// SDKLogger returns the SDK's structured logger over l. executionOf maps a
// workflow id to the id of the execution it runs ("" for none).
func SDKLogger(l *slog.Logger, executionOf func(workflowID string) string) sdklog.Logger {
	// Skip 1: this wrapper's own frame, so a source location names the
	// SDK's caller.
	return sdkLogger{inner: sdklog.Skip(sdklog.NewStructuredLogger(l), 1), executionOf: executionOf}
}

// sdkWorkflowIDTag is the key the SDK tags workflow and activity lines
// with (its internal tagWorkflowID, unexported).
const sdkWorkflowIDTag = "WorkflowID"

func (s sdkLogger) Debug(msg string, kv ...any) { s.inner.Debug(msg, s.named(kv)...) }
func (s sdkLogger) Info(msg string, kv ...any)  { s.inner.Info(msg, s.named(kv)...) }
func (s sdkLogger) Warn(msg string, kv ...any)  { s.inner.Warn(msg, s.named(kv)...) }
func (s sdkLogger) Error(msg string, kv ...any) { s.inner.Error(msg, s.named(kv)...) }

// With keeps the SDK's child loggers (one per workflow or activity task)
// naming their execution; the SDK calls it with the WorkflowID tag.
func (s sdkLogger) With(kv ...any) sdklog.Logger {
	return sdkLogger{inner: sdklog.With(s.inner, s.named(kv)...), executionOf: s.executionOf}
}

// WithCallerSkip keeps source locations right under further wrappers.
func (s sdkLogger) WithCallerSkip(depth int) sdklog.Logger {
	return sdkLogger{inner: sdklog.Skip(s.inner, depth), executionOf: s.executionOf}
}

// named appends execution_id and workflow_id to kv when kv carries the
// SDK's WorkflowID tag of an execution's workflow.
func (s sdkLogger) named(kv []any) []any {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] != sdkWorkflowIDTag {
			continue
		}
		wf, ok := kv[i+1].(string)
		if !ok {
			return kv
		}
		id := s.executionOf(wf)
		if id == "" {
			return kv
		}
		out := make([]any, len(kv), len(kv)+4)
		copy(out, kv)
		return append(out, "execution_id", id, "workflow_id", wf)
	}
	return kv
}
