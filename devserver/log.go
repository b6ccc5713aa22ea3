package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// newServerLogger adapts an slog.Logger to the server's log.Logger.
func newServerLogger(filtered *slog.Logger) *slogAdapter {
	return &slogAdapter{l: filtered.With("component", "temporal")}
}

// newFilteredLogger wraps base so that only records at or above level
// (default warn) pass.
func newFilteredLogger(base *slog.Logger, level string) (*slog.Logger, error) {
	min, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	return slog.New(&minLevelHandler{min: min, next: base.Handler()}), nil
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "warn", "warning":
		return slog.LevelWarn, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "error":
		return slog.LevelError, nil
	default:
		return 0, fmt.Errorf("devserver: unknown LogLevel %q (want debug, info, warn or error)", s)
	}
}

// minLevelHandler drops records below min before they reach next.
type minLevelHandler struct {
	min  slog.Level
	next slog.Handler
}

func (h *minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.next.Enabled(ctx, l)
}

func (h *minLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h *minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &minLevelHandler{min: h.min, next: h.next.WithAttrs(attrs)}
}

func (h *minLevelHandler) WithGroup(name string) slog.Handler {
	return &minLevelHandler{min: h.min, next: h.next.WithGroup(name)}
}

// slogAdapter implements the server's log.Logger on top of slog.
type slogAdapter struct{ l *slog.Logger }

var (
	_ log.Logger      = (*slogAdapter)(nil)
	_ log.WithLogger  = (*slogAdapter)(nil)
	_ log.SLogWrapper = (*slogAdapter)(nil)
	_ log.SkipLogger  = (*slogAdapter)(nil)
)

func (a *slogAdapter) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !a.l.Enabled(ctx, level) {
		return
	}
	a.l.LogAttrs(ctx, level, msg, tagsToAttrs(tags)...)
}

func tagsToAttrs(tags []tag.Tag) []slog.Attr {
	attrs := make([]slog.Attr, 0, len(tags))
	for _, t := range tags {
		if t == nil {
			continue
		}
		attrs = append(attrs, slog.Any(t.Key(), t.Value()))
	}
	return attrs
}

func (a *slogAdapter) Debug(msg string, tags ...tag.Tag) { a.emit(slog.LevelDebug, msg, tags) }
func (a *slogAdapter) Info(msg string, tags ...tag.Tag)  { a.emit(slog.LevelInfo, msg, tags) }
func (a *slogAdapter) Warn(msg string, tags ...tag.Tag)  { a.emit(slog.LevelWarn, msg, tags) }
func (a *slogAdapter) Error(msg string, tags ...tag.Tag) { a.emit(slog.LevelError, msg, tags) }

// DPanic logs at error level; like zap in production mode it does not panic.
func (a *slogAdapter) DPanic(msg string, tags ...tag.Tag) { a.emit(slog.LevelError, msg, tags) }

func (a *slogAdapter) Panic(msg string, tags ...tag.Tag) {
	a.emit(slog.LevelError, msg, tags)
	panic(msg)
}

// Fatal logs and panics with a fatalError instead of exiting the process:
// Start turns it into an error when it happens while starting (for example a
// port that cannot be bound); elsewhere it crashes with a stack trace.
func (a *slogAdapter) Fatal(msg string, tags ...tag.Tag) {
	a.emit(slog.LevelError, msg, tags)
	attrs := tagsToAttrs(tags)
	var b strings.Builder
	b.WriteString(msg)
	for _, at := range attrs {
		fmt.Fprintf(&b, " %s=%v", at.Key, at.Value)
	}
	panic(fatalError(b.String()))
}

func (a *slogAdapter) With(tags ...tag.Tag) log.Logger {
	attrs := tagsToAttrs(tags)
	args := make([]any, len(attrs))
	for i, at := range attrs {
		args[i] = at
	}
	return &slogAdapter{l: a.l.With(args...)}
}

func (a *slogAdapter) Skip(int) log.Logger { return a }

// SLog lets the server's slog users (log.NewSlogLogger) log straight to us.
func (a *slogAdapter) SLog() *slog.Logger { return a.l }

// fatalError is the panic value of slogAdapter.Fatal.
type fatalError string

func (e fatalError) Error() string  { return "temporal server fatal: " + string(e) }
func (e fatalError) String() string { return e.Error() }

// catchFatal runs f, converting a fatalError panic into an error.
func catchFatal(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if fe, ok := r.(fatalError); ok {
				err = fe
				return
			}
			panic(r)
		}
	}()
	return f()
}
