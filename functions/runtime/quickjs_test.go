package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// nullHost answers every read with nothing.
type nullHost struct{}

func (nullHost) Get(context.Context, string) (any, error) { return nil, nil }
func (nullHost) Query(context.Context, string, map[string]any, int) (any, error) {
	return []any{}, nil
}
func (nullHost) Links(context.Context, string, string) (any, error) { return []any{}, nil }
func (nullHost) Fetch(context.Context, FetchRequest) (*FetchResponse, error) {
	return nil, errors.New("no network")
}

// runtimes are both ways to run: in process, and in a worker process.
var runtimes = map[string]Runtime{"in process": QuickJS{}, "worker": Workers{}}

func runJS(t *testing.T, lang, src string, lim Limits) (*Output, error) {
	t.Helper()
	return runOn(t, QuickJS{}, lang, src, lim)
}

func runOn(t *testing.T, rt Runtime, lang, src string, lim Limits) (*Output, error) {
	t.Helper()
	prog, err := Compile(lang, src)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	in := Input{Parameters: map[string]any{"n": 2}, Actor: Actor{ID: "u1", Username: "ann", Roles: []string{"user"}},
		Action: Action{Name: "a", Version: 1}, ExecutionID: "e1"}
	return rt.Run(context.Background(), prog, in, nullHost{}, lim)
}

func TestRunReturnsEditsAndConsole(t *testing.T) {
	for name, rt := range runtimes {
		t.Run(name, func(t *testing.T) { testRunReturnsEditsAndConsole(t, rt) })
	}
}

func testRunReturnsEditsAndConsole(t *testing.T, rt Runtime) {
	out, err := runOn(t, rt, "typescript", `
interface Ctx { parameters: { n: number }, actor: { username: string } }
export default async function (ctx: Ctx) {
  console.log("hello", ctx.actor.username, { n: ctx.parameters.n });
  const o = ctx.ontology.get("x");
  return { edits: [{ type: "update", object_id: "o1", properties: { n: ctx.parameters.n * 21 } }], result: o };
}`, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out.Value, &v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out.Value), `"n":42`) || v["result"] != nil {
		t.Fatalf("value %s", out.Value)
	}
	if out.Console != "info hello ann {\"n\":2}\n" {
		t.Fatalf("console %q", out.Console)
	}
}

func TestHandlerExport(t *testing.T) {
	out, err := runJS(t, "javascript", `export function handler(ctx) { return { result: ctx.execution_id } }`, Limits{})
	if err != nil || string(out.Value) != `{"result":"e1"}` {
		t.Fatalf("%s %v", out.Value, err)
	}
}

// TestES2023: the language the docs promise runs, in both languages:
// ES2023's array methods (QuickJS's, esbuild does not polyfill) and its
// hashbang line (syntax, esbuild's target).
func TestES2023(t *testing.T) {
	src := "#!/usr/bin/env ontoflow\n" + `export default function (ctx: unknown) {
  const a: number[] = [3, 1, 2];
  return [a.findLast((x) => x > 1), a.findLastIndex((x) => x > 5), a.toSorted(), a.toReversed(), a.with(0, 9), a.toSpliced(0, 1), a];
}`
	for _, lang := range []string{"typescript", "javascript"} {
		code := src
		if lang == "javascript" {
			code = strings.Replace(src, "ctx: unknown", "ctx", 1)
			code = strings.Replace(code, ": number[]", "", 1)
		}
		out, err := runJS(t, lang, code, Limits{})
		if err != nil || string(out.Value) != `[2,-1,[1,2,3],[2,1,3],[9,1,2],[1,2],[3,1,2]]` {
			t.Fatalf("%s: %s %v", lang, out.Value, err)
		}
	}
}

func TestCompileErrorHasPosition(t *testing.T) {
	_, err := Compile("javascript", "export default function (ctx) {\n  return {;\n}")
	var f *Failure
	if !errors.As(err, &f) || f.Reason != ReasonCompile || f.Line != 2 || f.Column == 0 {
		t.Fatalf("%#v", err)
	}
}

// TestHostileFunctions: each ends in a typed failure, quickly, and a normal
// function still runs afterwards.
func TestHostileFunctions(t *testing.T) {
	cases := []struct {
		name, src, reason string
	}{
		{"infinite loop", `export default function () { for (;;) {} }`, ReasonTimeout},
		{"1 GiB allocation", `export default function () { const a = []; for (let i = 0; i < 1024; i++) a.push(new Uint8Array(1 << 20)); return a.length }`, ReasonMemory},
		{"string growth", `export default function () { let s = "x"; for (;;) s += s; }`, ReasonMemory},
		{"deep recursion", `export default function () { const f = (n) => f(n + 1) + 1; return f(0) }`, ReasonStack},
		{"100 MiB result", `export default function () { return { result: "x".repeat(100 << 20) } }`, ReasonMemory},
		{"2 MiB result", `export default function () { return { result: "x".repeat(2 << 20) } }`, ReasonResult},
		{"10 MB console", `export default function () { for (let i = 0; i < 1e5; i++) console.log("y".repeat(100)); }`, ReasonConsole},
		{"console caught", `export default function () { for (let i = 0; i < 1e5; i++) { try { console.log("y".repeat(100)) } catch (e) {} } }`, ReasonConsole},
		{"require", `export default function () { return require("fs") }`, ReasonThrown},
		{"process", `export default function () { return process.env }`, ReasonThrown},
		{"host via globalThis", `export default function () { return globalThis.__ontoflow_host("get", "{}") }`, ReasonThrown},
		{"constructor escape", `export default function () { return (function(){}).constructor("return std")() }`, ReasonThrown},
		{"never settles", `export default function () { return new Promise(() => {}) }`, ReasonPending},
		{"throws", `export default function () { throw new Error("boom") }`, ReasonThrown},
		{"no handler", `export const x = 1`, ReasonNoHandler},
	}
	for name, rt := range runtimes {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				start := time.Now()
				_, err := runOn(t, rt, "javascript", c.src, Limits{Timeout: time.Second, Memory: 32 << 20})
				var f *Failure
				if !errors.As(err, &f) || f.Reason != c.reason {
					t.Fatalf("want %s, got %v", c.reason, err)
				}
				if d := time.Since(start); d > 3*time.Second {
					t.Fatalf("took %s", d)
				}
				if c.reason == ReasonConsole && (len(f.Console) < 60<<10 || len(f.Console) > MaxConsole) {
					t.Fatalf("console of %d bytes, want the first 64 KiB", len(f.Console))
				}
			})
		}
	}
	// The reader of the result cannot be replaced (the assignment is
	// ignored, or throws in strict code).
	out, err := runJS(t, "javascript", `try { globalThis.__ontoflow_state = () => JSON.stringify({ state: "done", json: "x".repeat(2 << 20) }) } catch (e) {}
export default () => 1`, Limits{})
	if err != nil || string(out.Value) != "1" {
		t.Fatalf("replaced reader: %v", err)
	}
	out, err = runJS(t, "javascript", `export default function (ctx) { return { result: typeof require + typeof process + typeof std + typeof os + typeof setTimeout + typeof fetch } }`, Limits{})
	if err != nil || string(out.Value) != `{"result":"undefinedundefinedundefinedundefinedundefinedundefined"}` {
		t.Fatalf("%s %v", out.Value, err)
	}
}

func BenchmarkRun(b *testing.B) {
	prog, err := Compile("javascript", `export default function (ctx) { return { edits: [{ type: "update", object_id: "o", properties: { n: ctx.parameters.n + 1 } }] } }`)
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Parameters: map[string]any{"n": 1}}
	for name, rt := range runtimes {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := rt.Run(context.Background(), prog, in, nullHost{}, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunHostCalls: a run making ten host calls, each a round trip
// to the parent for a worker.
func BenchmarkRunHostCalls(b *testing.B) {
	prog, err := Compile("javascript", `export default function (ctx) { let n = 0; for (let i = 0; i < 10; i++) if (ctx.ontology.get("o" + i) === null) n++; return n }`)
	if err != nil {
		b.Fatal(err)
	}
	for name, rt := range runtimes {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if out, err := rt.Run(context.Background(), prog, Input{}, nullHost{}, Limits{}); err != nil || string(out.Value) != "10" {
					b.Fatal(out, err)
				}
			}
		})
	}
}

// BenchmarkSpawnWorker: what a run waits for when no worker is idle (the
// first run, and the next after a worker was killed, unless the one
// started ahead is ready).
func BenchmarkSpawnWorker(b *testing.B) {
	for b.Loop() {
		p, err := workers.spawn()
		if err != nil {
			b.Fatal(err)
		}
		p.close()
	}
}

// echoHost answers a query with what it was asked.
type echoHost struct{ nullHost }

func (echoHost) Query(_ context.Context, typ string, filters map[string]any, limit int) (any, error) {
	return map[string]any{"type": typ, "filters": filters, "limit": limit}, nil
}

// TestQueryOptions: ctx.ontology.query takes a limit or {limit,
// order_by}; order_by reaches the host among the filters as $order_by.
func TestQueryOptions(t *testing.T) {
	for name, rt := range runtimes {
		t.Run(name, func(t *testing.T) {
			prog, err := Compile("javascript", `export default (ctx) => ({ result: [
  ctx.ontology.query("T", { a: 1 }, 7),
  ctx.ontology.query("T", { a: 1 }, { limit: 5, order_by: "-n" }),
  ctx.ontology.query("T") ] })`)
			if err != nil {
				t.Fatal(err)
			}
			out, err := rt.Run(context.Background(), prog, Input{}, echoHost{}, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			want := `{"result":[{"filters":{"a":1},"limit":7,"type":"T"},{"filters":{"$order_by":"-n","a":1},"limit":5,"type":"T"},{"filters":{},"limit":0,"type":"T"}]}`
			if string(out.Value) != want {
				t.Fatalf("got  %s\nwant %s", out.Value, want)
			}
		})
	}
}
