package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// newServerLogger adapts an slog.Logger to the server's log.Logger:
// records go to filtered, except the known noise of starting and stopping,
// which goes to base at debug (see phaseHandler).
func newServerLogger(filtered, base *slog.Logger) *slogAdapter {
	h := &phaseHandler{running: filtered.Handler(), noise: base.Handler(), phase: new(atomic.Int32)}
	return &slogAdapter{l: slog.New(h).With("component", "temporal"), phase: h.phase}
}

// The server's phases, as far as its logs are concerned.
const (
	phaseStarting int32 = iota
	phaseRunning
	phaseStopping
)

// phaseHandler passes the embedded server's records on unchanged while it
// runs. While it stops, its services go down one after another and each
// complains about the ones already gone ("error fetching user data from
// parent", "Failed to check Nexus endpoints ownership", pollers' "Failed
// to poll for task.": 28 lines at WARN and ERROR on every clean Ctrl-C,
// measured); while it starts, its internal worker dials the frontend
// before it is healthy and says so at ERROR. Neither means anything is
// wrong, and a real failure to start or stop is returned by Start and
// Stop. So every record after the stop begins, and at start those that
// only say the frontend is not up yet, are demoted to debug and marked as
// noise with their level: `--log-level debug` still shows all of it, a
// newcomer reads no crash.
type phaseHandler struct {
	running slog.Handler  // filtered at the configured level
	noise   slog.Handler  // unfiltered; receives the demoted records
	phase   *atomic.Int32 // shared by every handler derived from this one
}

func (h *phaseHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.running.Enabled(ctx, l) || h.noise.Enabled(ctx, slog.LevelDebug)
}

func (h *phaseHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug && h.isNoise(r) {
		was := r.Level
		r = r.Clone()
		r.Level = slog.LevelDebug
		r.AddAttrs(slog.Bool("noise", true), slog.String("level_was", was.String()))
		if !h.noise.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		return h.noise.Handle(ctx, r)
	}
	if !h.running.Enabled(ctx, r.Level) {
		return nil
	}
	return h.running.Handle(ctx, r)
}

// isNoise tells the records of a stop, and a start's complaints that the
// frontend is not healthy yet, from everything else.
func (h *phaseHandler) isNoise(r slog.Record) bool {
	switch h.phase.Load() {
	case phaseStopping:
		return true
	case phaseStarting:
		noise := false
		r.Attrs(func(a slog.Attr) bool {
			noise = strings.Contains(a.Value.String(), "not healthy yet")
			return !noise
		})
		return noise
	}
	return false
}

func (h *phaseHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &phaseHandler{running: h.running.WithAttrs(attrs), noise: h.noise.WithAttrs(attrs), phase: h.phase}
}

func (h *phaseHandler) WithGroup(name string) slog.Handler {
	return &phaseHandler{running: h.running.WithGroup(name), noise: h.noise.WithGroup(name), phase: h.phase}
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
type slogAdapter struct {
	l     *slog.Logger
	phase *atomic.Int32 // set by Start and Stop; see phaseHandler
}

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
	return &slogAdapter{l: a.l.With(args...), phase: a.phase}
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
