package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/quickjs"
)

// QuickJS runs JavaScript on modernc.org/quickjs, one fresh VM per run
// (0.32-0.37 ms measured here, including the call), so nothing a
// function leaves behind — a patched prototype, a global — reaches the
// next run. The VM has no require, process, std, os, timers or module
// loader; the only way out is the host function the prelude captures and
// then deletes from the global object.
type QuickJS struct{}

// Name implements Runtime.
func (QuickJS) Name() string { return LangJavaScript }

// prelude builds console and the ctx the handler receives around the one
// host function, which it removes from the global object first, so user
// code can reach the host only through ctx.ontology (and ctx.fetch).
var prelude = `(function () {
  const host = globalThis.__ontoflow_host;
  delete globalThis.__ontoflow_host;
  const call = (op, arg) => JSON.parse(host(op, JSON.stringify(arg === undefined ? null : arg)));
  const fmt = (a) => { if (typeof a === 'string') return a; try { return JSON.stringify(a); } catch (e) { return String(a); } };
  const log = (level) => (...args) => { host('log', level + ' ' + args.map(fmt).join(' ')); };
  globalThis.console = { log: log('info'), info: log('info'), warn: log('warn'), error: log('error'), debug: log('debug') };
  const b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const unbase64 = (s) => {
    let n = s.length;
    while (n > 0 && s[n - 1] === '=') n--;
    const out = new Uint8Array(Math.floor(n * 3 / 4));
    let acc = 0, bits = 0, j = 0;
    for (let i = 0; i < n; i++) {
      acc = ((acc << 6) | b64.indexOf(s[i])) & 0xffffff;
      bits += 6;
      if (bits >= 8) { bits -= 8; out[j++] = (acc >> bits) & 255; }
    }
    return out;
  };
  let state = { state: 'pending' };
  const start = function (inputJSON, network) {
    const ctx = JSON.parse(inputJSON);
    ctx.ontology = Object.freeze({
      get: (id) => call('get', { id: id }),
      // query(type, filters, limit) or query(type, filters, {limit, order_by}); order_by rides in the
      // filters as $order_by (no property name starts with $; functions.Reads reads it).
      query: (type, filters, opts) => {
        const o = opts !== null && typeof opts === 'object' ? opts : { limit: opts };
        const f = Object.assign({}, filters || {});
        if (o.order_by) f['$order_by'] = String(o.order_by);
        return call('query', { type: type, filters: f, limit: o.limit || 0 });
      },
      links: (id, linkType) => call('links', { id: id, link_type: linkType || '' }),
      // aggregate(type, request): the body of POST .../types/{type}/aggregate.
      aggregate: (type, request) => call('aggregate', { type: type, request: request || {} }),
    });
    ctx.media = Object.freeze({
      stat: (ref) => call('media_stat', { ref: ref === undefined ? null : ref }),
      read: (ref, opts) => {
        const o = opts || {};
        const bytes = o.as === 'bytes';
        const r = call('media_read', { ref: ref === undefined ? null : ref, max_bytes: Number(o.max_bytes || 0), bytes: bytes });
        if (bytes) { r.bytes = unbase64(r.data || ''); delete r.data; }
        return r;
      },
    });
    if (network) {
      ctx.fetch = async (url, opts) => {
        const o = opts || {};
        const r = call('fetch', { url: String(url), method: o.method, headers: o.headers, body: o.body === undefined ? undefined : String(o.body) });
        return { status: r.status, ok: r.status >= 200 && r.status < 300, headers: r.headers,
          text: async () => r.body, json: async () => JSON.parse(r.body) };
      };
    }
    const m = globalThis.` + GlobalName + ` || {};
    const f = typeof m.default === 'function' ? m.default : m.handler;
    if (typeof f !== 'function') { state = { state: 'no_handler' }; return; }
    Promise.resolve().then(() => f(ctx)).then(
      (v) => { state = { state: 'done', json: v === undefined ? 'null' : JSON.stringify(v) }; },
      (e) => { state = { state: 'error', message: (e && e.stack) ? String(e) + '\n' + e.stack : String(e) }; });
  };
  const read = function () {
    const s = state;
    if (s.state === 'done' && s.json.length > ` + fmt.Sprint(MaxResultBytes) + `) return JSON.stringify({ state: 'too_large', size: s.json.length });
    return JSON.stringify(s);
  };
  // Fixed, so that the function cannot replace what reads its result.
  Object.defineProperty(globalThis, '__ontoflow_start', { value: start, writable: false, configurable: false });
  Object.defineProperty(globalThis, '__ontoflow_state', { value: read, writable: false, configurable: false });
})();`

// run is one run's host side.
type run struct {
	ctx     context.Context
	host    Host
	vm      *quickjs.VM
	console strings.Builder
	full    atomic.Bool
	network bool
}

// Run implements Runtime.
func (q QuickJS) Run(ctx context.Context, prog Program, in Input, host Host, lim Limits) (*Output, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode the function's input: %w", err)
	}
	return q.run(ctx, prog, input, host, lim)
}

// run is Run with the input encoded (a worker gets it so: decoding it
// would round its numbers).
func (QuickJS) run(ctx context.Context, prog Program, input json.RawMessage, host Host, lim Limits) (*Output, error) {
	lim = lim.Normalized()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("start a quickjs VM: %w", err)
	}
	defer vm.Close()
	vm.SetMemoryLimit(uintptr(lim.Memory))
	// The timeout is per call into JavaScript; the context bounds the run
	// as a whole (its Interrupt also ends a wait in a host function).
	stop := context.AfterFunc(ctx, vm.Interrupt)
	defer stop()
	r := &run{ctx: ctx, host: host, vm: vm, network: lim.Network}
	if err := vm.RegisterHostFunc("__ontoflow_host", r.call); err != nil {
		return nil, fmt.Errorf("register the host function: %w", err)
	}
	out, err := r.evaluate(prog, input, lim)
	if err != nil {
		return nil, r.failure(err)
	}
	return &Output{Value: out, Console: r.console.String(), Duration: time.Since(start)}, nil
}

// evaluate loads the program, calls the handler and drains its promise.
func (r *run) evaluate(prog Program, input json.RawMessage, lim Limits) (json.RawMessage, error) {
	if err := r.load(prelude); err != nil {
		return nil, err
	}
	if err := r.load(prog.Code); err != nil {
		return nil, err
	}
	r.arm()
	if _, err := r.vm.Call("__ontoflow_start", string(input), lim.Network); err != nil {
		return nil, err
	}
	for {
		r.arm()
		n, err := r.vm.ExecutePendingJobs()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
	}
	return r.result()
}

// bytecode caches compiled scripts by their source's hash: parsing the
// prelude and the function on every run was about 40% of a run's CPU
// (profile of actionbench -functions). The bytecode is ours (compiled in
// this process by this QuickJS), never read from outside.
var bytecode = struct {
	sync.Mutex
	m map[[32]byte][]byte
}{m: map[[32]byte][]byte{}}

const bytecodeCacheMax = 512

// load evaluates a script, from cached bytecode when this process has
// compiled it before, with what is left of the deadline.
func (r *run) load(code string) error {
	key := sha256.Sum256([]byte(code))
	bytecode.Lock()
	bc, ok := bytecode.m[key]
	bytecode.Unlock()
	if !ok {
		r.arm()
		var err error
		if bc, err = r.vm.Compile(code, quickjs.EvalGlobal); err != nil {
			return err
		}
		bytecode.Lock()
		if len(bytecode.m) >= bytecodeCacheMax {
			clear(bytecode.m)
		}
		bytecode.m[key] = bc
		bytecode.Unlock()
	}
	r.arm()
	_, err := r.vm.EvalBytecode(bc)
	return err
}

// arm sets the per-call timeout to what is left of the run's.
func (r *run) arm() {
	if dl, ok := r.ctx.Deadline(); ok {
		_ = r.vm.SetEvalTimeout(max(time.Until(dl), time.Millisecond))
	}
}

// result reads the handler's settled value.
func (r *run) result() (json.RawMessage, error) {
	r.arm()
	v, err := r.vm.Call("__ontoflow_state")
	if err != nil {
		return nil, err
	}
	s, _ := v.(string)
	var st struct {
		State   string `json:"state"`
		JSON    string `json:"json"`
		Message string `json:"message"`
		Size    int    `json:"size"`
	}
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return nil, fmt.Errorf("decode the function's state: %w", err)
	}
	switch st.State {
	case "done":
		// Checked here too: the workflow's history must never receive a
		// payload past Temporal's limit, whatever the script did.
		if len(st.JSON) > MaxResultBytes {
			return nil, &Failure{Reason: ReasonResult, Message: fmt.Sprintf("the result is %d bytes of JSON, at most %d", len(st.JSON), MaxResultBytes)}
		}
		return json.RawMessage(st.JSON), nil
	case "error":
		return nil, r.classify(&Failure{Reason: ReasonThrown, Message: clip(st.Message, 2048)})
	case "no_handler":
		return nil, &Failure{Reason: ReasonNoHandler, Message: "the module exports no default function and no handler"}
	case "too_large":
		return nil, &Failure{Reason: ReasonResult, Message: fmt.Sprintf("the result is %d bytes of JSON, at most %d", st.Size, MaxResultBytes)}
	}
	return nil, &Failure{Reason: ReasonPending, Message: "the function's promise never settled (there are no timers or I/O to settle it)"}
}

// failure classifies err: a limit the run hit, the function's exception,
// or the host's error as is.
func (r *run) failure(err error) error {
	var f *Failure
	if errors.As(err, &f) {
		f.Console = r.console.String()
		return f
	}
	f = &Failure{Reason: ReasonThrown, Message: clip(err.Error(), 2048)}
	var qe *quickjs.Error
	if errors.As(err, &qe) && qe.LineNumber > 0 {
		f.Line, f.Column = qe.LineNumber, qe.ColumnNumber
	}
	return r.classify(f)
}

// classify names the limit behind an exception: the engine reports them
// as InternalErrors, which a function may also have caught and rethrown.
func (r *run) classify(f *Failure) *Failure {
	f.Console = r.console.String()
	msg := f.Message
	switch {
	case r.full.Load():
		f.Reason, f.Message = ReasonConsole, fmt.Sprintf("console output exceeded %d bytes", MaxConsole)
	case errors.Is(r.ctx.Err(), context.DeadlineExceeded) || strings.Contains(msg, "interrupted"):
		f.Reason, f.Message = ReasonTimeout, "the function ran past its time limit"
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "string too long"):
		f.Reason, f.Message = ReasonMemory, "the function ran out of memory"
	case strings.Contains(msg, "stack overflow") || strings.Contains(msg, "call stack"):
		f.Reason, f.Message = ReasonStack, "the function recursed too deeply (stack overflow)"
	}
	return f
}

// call is the one host function: op and a JSON argument in, JSON out.
func (r *run) call(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("host: bad call")
	}
	op, _ := args[0].(string)
	arg, _ := args[1].(string)
	if op == "log" {
		r.log(arg)
		return "null", nil
	}
	var out string
	var err error
	if rl, ok := r.host.(relay); ok {
		out, err = rl.relay(op, arg)
	} else {
		out, err = answer(r.ctx, r.host, r.network, op, arg)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// answer is dispatch's answer as JSON.
func answer(ctx context.Context, host Host, network bool, op, arg string) (string, error) {
	v, err := dispatch(ctx, host, network, op, arg)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("host %s: encode the answer: %w", op, err)
	}
	return string(b), nil
}

// log appends a console line; past the cap the run is interrupted (an
// exception the function could catch would let it go on printing).
func (r *run) log(line string) {
	if r.console.Len()+len(line)+1 > MaxConsole {
		r.console.WriteString(strings.ToValidUTF8(line[:max(0, min(len(line), MaxConsole-r.console.Len()))], ""))
		r.full.Store(true)
		r.vm.Interrupt()
		return
	}
	r.console.WriteString(line)
	r.console.WriteByte('\n')
	if rl, ok := r.host.(relay); ok {
		rl.logged(line)
	}
}

// relay is a Host that passes calls on still encoded: a worker process's,
// whose parent answers them (worker.go).
type relay interface {
	Host
	// relay answers op with arg, both JSON, as dispatch would.
	relay(op, arg string) (string, error)
	// logged tells of a console line kept, so that what was printed
	// before a run is killed is not lost with the worker.
	logged(line string)
}

// dispatch answers a host call: op with its argument as JSON, read with
// ctx (the run's deadline) from host; fetch only with network.
func dispatch(ctx context.Context, host Host, network bool, op, arg string) (any, error) {
	switch op {
	case "get":
		var a struct{ ID string }
		if err := json.Unmarshal([]byte(arg), &a); err != nil {
			return nil, fmt.Errorf("ontology.get: %w", err)
		}
		return host.Get(ctx, a.ID)
	case "query":
		var a struct {
			Type    string         `json:"type"`
			Filters map[string]any `json:"filters"`
			Limit   int            `json:"limit"`
		}
		if err := json.Unmarshal([]byte(arg), &a); err != nil {
			return nil, fmt.Errorf("ontology.query: %w", err)
		}
		return host.Query(ctx, a.Type, a.Filters, a.Limit)
	case "links":
		var a struct {
			ID       string `json:"id"`
			LinkType string `json:"link_type"`
		}
		if err := json.Unmarshal([]byte(arg), &a); err != nil {
			return nil, fmt.Errorf("ontology.links: %w", err)
		}
		return host.Links(ctx, a.ID, a.LinkType)
	case "aggregate":
		ah, ok := host.(AggregateHost)
		if !ok {
			return nil, errors.New("ontology.aggregate is not available in this process")
		}
		var a struct {
			Type    string          `json:"type"`
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal([]byte(arg), &a); err != nil {
			return nil, fmt.Errorf("ontology.aggregate: %w", err)
		}
		return ah.Aggregate(ctx, a.Type, a.Request)
	case "media_stat", "media_read":
		return dispatchMedia(ctx, host, network, op, arg)
	case "fetch":
		if !network {
			return nil, errors.New("fetch needs the network capability")
		}
		var a FetchRequest
		if err := json.Unmarshal([]byte(arg), &a); err != nil {
			return nil, fmt.Errorf("fetch: %w", err)
		}
		return host.Fetch(ctx, a)
	}
	return nil, fmt.Errorf("host: unknown operation %q", op)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
