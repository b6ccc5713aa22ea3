package api

import (
	"log/slog"
	"time"
)

func levelFor(status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case status >= 400:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

func slogAttrs(method, path string, status, size int, d time.Duration, user string) []slog.Attr {
	return []slog.Attr{
		slog.String("method", method), slog.String("path", path), slog.Int("status", status),
		slog.Int("bytes", max(size, 0)), slog.Duration("duration", d), slog.String("user", user),
	}
}
