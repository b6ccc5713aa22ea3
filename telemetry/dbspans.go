package telemetry

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// dbSpanKey is where a statement's span waits for its end.
const dbSpanKey = "telemetry:span"

// maxStatement bounds the SQL text a span keeps.
const maxStatement = 2000

// TraceDB records a span for each statement db runs inside a trace
// (named "<OPERATION> <table>", the semantic conventions' db.system,
// db.operation, db.sql.table and db.statement — the SQL with its
// placeholders, never the values). Statements outside a trace (sweeps,
// migrations) start none: a root span per background query would bury
// the traces people read.
func (t *Tracing) TraceDB(db *gorm.DB) error {
	if t == nil {
		return nil
	}
	tracer := t.provider.Tracer("github.com/ontoflow/ontoflow/db")
	system := db.Dialector.Name()
	if system == "postgres" {
		system = "postgresql"
	}
	cb := db.Callback()
	type hook struct {
		op            string
		before, after func(string, func(*gorm.DB)) error
	}
	hooks := []hook{
		{"INSERT", func(n string, f func(*gorm.DB)) error { return cb.Create().Before("*").Register(n, f) },
			func(n string, f func(*gorm.DB)) error { return cb.Create().After("*").Register(n, f) }},
		{"SELECT", func(n string, f func(*gorm.DB)) error { return cb.Query().Before("*").Register(n, f) },
			func(n string, f func(*gorm.DB)) error { return cb.Query().After("*").Register(n, f) }},
		{"UPDATE", func(n string, f func(*gorm.DB)) error { return cb.Update().Before("*").Register(n, f) },
			func(n string, f func(*gorm.DB)) error { return cb.Update().After("*").Register(n, f) }},
		{"DELETE", func(n string, f func(*gorm.DB)) error { return cb.Delete().Before("*").Register(n, f) },
			func(n string, f func(*gorm.DB)) error { return cb.Delete().After("*").Register(n, f) }},
		{"SELECT", func(n string, f func(*gorm.DB)) error { return cb.Row().Before("*").Register(n, f) },
			func(n string, f func(*gorm.DB)) error { return cb.Row().After("*").Register(n, f) }},
		{"SQL", func(n string, f func(*gorm.DB)) error { return cb.Raw().Before("*").Register(n, f) },
			func(n string, f func(*gorm.DB)) error { return cb.Raw().After("*").Register(n, f) }},
	}
	for i, h := range hooks {
		op := h.op
		start := func(tx *gorm.DB) {
			ctx := tx.Statement.Context
			if ctx == nil || !trace.SpanContextFromContext(ctx).IsValid() {
				return
			}
			ctx, span := tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient))
			tx.Statement.Context = ctx
			tx.InstanceSet(dbSpanKey, span)
		}
		end := func(tx *gorm.DB) {
			v, ok := tx.InstanceGet(dbSpanKey)
			if !ok {
				return
			}
			span := v.(trace.Span)
			table := tx.Statement.Table
			if table != "" {
				span.SetName(op + " " + table)
			}
			sql := tx.Statement.SQL.String()
			if len(sql) > maxStatement {
				sql = sql[:maxStatement]
			}
			span.SetAttributes(attribute.String("db.system", system), attribute.String("db.operation", op),
				attribute.String("db.sql.table", table), attribute.String("db.statement", sql),
				attribute.Int64("db.rows_affected", tx.Statement.RowsAffected))
			if err := tx.Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
				span.RecordError(err)
				span.SetStatus(codes.Error, "statement failed")
			}
			span.End()
		}
		name := fmt.Sprintf("telemetry:span_%d", i)
		if err := h.before(name+"_start", start); err != nil {
			return fmt.Errorf("trace database statements: %w", err)
		}
		if err := h.after(name+"_end", end); err != nil {
			return fmt.Errorf("trace database statements: %w", err)
		}
	}
	return nil
}
