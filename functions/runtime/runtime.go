// Package runtime runs user functions, sandboxed: a Runtime evaluates a
// compiled program against one input, with wall-time, memory, result and
// console limits, and nothing reaching the host except the Host functions
// it is given (ontology reads with the actor's read rule,
// and fetch only with the network capability). QuickJS (modernc.org/quickjs,
// pure Go) is the JavaScript engine; TypeScript is compiled to the same
// JavaScript once, at publish time (Compile). QuickJS runs a program in
// this process; Workers runs it in a worker process, which can be killed
// at the time limit whatever the program does (worker.go). The interface
// is small so another engine can be added beside it.
package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Limits and defaults of a run (docs/functions.md, "Limits"). The
// config package's flags default to these; a function's capabilities
// may lower or raise time and memory up to the maxima.
const (
	DefaultTimeout = 5 * time.Second
	MaxTimeout     = 60 * time.Second
	DefaultMemory  = 64 << 20
	MaxMemory      = 256 << 20
	MaxSourceBytes = 64 << 10
	MaxResultBytes = 1 << 20
	MaxConsole     = 64 << 10
)

// Runtime runs compiled programs.
type Runtime interface {
	// Name is the runtime's name as function packages write it.
	Name() string
	// Run evaluates prog with in as ctx, calling host for reads. A
	// failure of the function (a throw, a limit) is a *Failure; any other
	// error is the host's.
	Run(ctx context.Context, prog Program, in Input, host Host, lim Limits) (*Output, error)
}

// Program is compiled JavaScript (Compile's output): a script that leaves
// the module's exports in the global GlobalName.
type Program struct {
	Code string
}

// Input is what the function receives as ctx (besides the host
// functions): JSON-encodable values only.
type Input struct {
	Parameters  map[string]any `json:"parameters"`
	Target      any            `json:"target"`
	Actor       Actor          `json:"actor"`
	Action      Action         `json:"action"`
	ExecutionID string         `json:"execution_id"`
}

// Actor is who runs the function: never secrets or hashes.
type Actor struct {
	ID       string   `json:"id"`
	Username string   `json:"username"`
	Roles    []string `json:"roles"`
}

// Action names the action type that runs the function.
type Action struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// Host is what a function may call. Each method answers JSON-encodable
// values; an error is thrown into the function as an exception.
type Host interface {
	// Get returns the object id as the actor may read it (nil: absent or
	// unreadable, which a function cannot tell apart).
	Get(ctx context.Context, id string) (any, error)
	// Query lists objects of a type the actor may read.
	Query(ctx context.Context, objectType string, filters map[string]any, limit int) (any, error)
	// Links lists links of an object the actor may read.
	Links(ctx context.Context, objectID, linkType string) (any, error)
	// Fetch makes an HTTP request (nil Host.Fetch support: the network
	// capability is not granted).
	Fetch(ctx context.Context, req FetchRequest) (*FetchResponse, error)
}

// AggregateHost is a Host that answers ctx.ontology.aggregate: request is
// the body of the REST aggregation (docs/ontology.md, "Aggregations"),
// answered under the actor's read rule; a Host without it answers the
// call with an error.
type AggregateHost interface {
	Aggregate(ctx context.Context, objectType string, request json.RawMessage) (any, error)
}

// MediaHost is a Host that reads the actor's WebDAV files (ctx.media); a
// Host without it answers ctx.media calls with an error. ref is a media
// reference as the function passed it (a string, or a parameter's pinned
// object).
type MediaHost interface {
	// MediaStat describes the file (nil: none the actor may read).
	MediaStat(ctx context.Context, ref any) (any, error)
	// MediaRead describes the file and holds its first maxBytes bytes:
	// "text" (UTF-8, invalid bytes replaced) or "data" (the bytes).
	MediaRead(ctx context.Context, ref any, maxBytes int64, asBytes bool) (any, error)
}

// Limits of ctx.media.read: the default and, without the network
// capability, the most one read returns; with it, MaxMediaReadNetwork.
const (
	MaxMediaRead        = 1 << 20
	MaxMediaReadNetwork = 16 << 20
)

// FetchRequest and FetchResponse are fetch's shapes.
type FetchRequest struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// FetchResponse is what fetch answers (body capped by the host).
type FetchResponse struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// Limits bound one run.
type Limits struct {
	Timeout time.Duration
	Memory  int64
	// Network grants fetch.
	Network bool
}

// Normalized fills zero limits with the defaults and clamps to the maxima.
func (l Limits) Normalized() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	l.Timeout = min(l.Timeout, MaxTimeout)
	l.Memory = min(l.Memory, MaxMemory)
	return l
}

// Output is what a run produced.
type Output struct {
	// Value is the function's return value, JSON (numbers exact).
	Value    json.RawMessage
	Console  string
	Duration time.Duration
}

// Failure reasons.
const (
	ReasonTimeout   = "timeout"
	ReasonMemory    = "memory_limit"
	ReasonStack     = "stack_overflow"
	ReasonResult    = "result_too_large"
	ReasonConsole   = "console_limit"
	ReasonSource    = "source_too_large"
	ReasonThrown    = "exception"
	ReasonNoHandler = "no_handler"
	ReasonPending   = "never_settled"
	ReasonCompile   = "compile_error"
	ReasonResultBad = "invalid_result"
)

// Failure is a function's failure: a throw or a limit it hit. Console is
// what it printed before.
type Failure struct {
	Reason  string
	Message string
	Console string
	Line    int `json:",omitempty"`
	Column  int `json:",omitempty"`
}

func (f *Failure) Error() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s at line %d, column %d: %s", f.Reason, f.Line, f.Column, f.Message)
	}
	return fmt.Sprintf("%s: %s", f.Reason, f.Message)
}
