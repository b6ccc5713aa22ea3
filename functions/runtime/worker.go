package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"sync"
	"time"
)

// Workers runs each function in a worker process: this same binary,
// started again as a worker (see init), where the function runs on
// QuickJS as in process. The parent answers the worker's host calls and
// kills the worker when the run passes its time limit by KillGrace.
//
// In process, QuickJS cannot always be stopped: it looks at its interrupt
// flag once every 10,000 function entries and backward jumps, and not at
// all inside a built-in. A function that recurses until the stack
// overflows and catches the overflow only to recurse again builds a
// backtrace of the whole stack at every overflow, so 10,000 calls take
// seconds; Array(2**32-1).indexOf(1) runs for minutes in one call. A
// goroutine cannot be stopped from outside; a process can.
//
// Workers are kept between runs (a fresh VM still serves every run), at
// most maxIdleWorkers idle, one started ahead of need.
type Workers struct{}

const (
	// KillGrace is how long past its time limit a run may take before its
	// worker is killed: the worker stops an interruptible function itself
	// at the limit, and its answer needs a moment to come back.
	KillGrace = 250 * time.Millisecond
	// workerEnv marks a process started as a worker; its value is the
	// protocol the parent speaks.
	workerEnv      = "ONTOFLOW_FUNCTION_WORKER"
	workerProtocol = "1"
	maxIdleWorkers = 4
	// spawnTimeout bounds a worker's start, up to its hello.
	spawnTimeout = 30 * time.Second
)

// init turns a process started as a worker into one before anything else
// of the binary runs (the re-exec pattern): every binary that can run
// functions can be a worker, tests included, with no subcommand to keep
// in step.
func init() {
	if v, ok := os.LookupEnv(workerEnv); ok {
		os.Exit(serveWorker(v))
	}
}

// Name implements Runtime.
func (Workers) Name() string { return LangJavaScript }

// Run implements Runtime.
func (Workers) Run(ctx context.Context, prog Program, in Input, host Host, lim Limits) (*Output, error) {
	lim = lim.Normalized()
	input, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode the function's input: %w", err)
	}
	req := &runRequest{Code: prog.Code, Input: input, Timeout: lim.Timeout, Memory: lim.Memory, Network: lim.Network}
	p, err := workers.get()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := p.send(request{Run: req}); err != nil {
		// An idle worker that died meanwhile (its pipe is closed): once
		// more with a new one.
		p.kill()
		if p, err = workers.spawn(); err != nil {
			return nil, err
		}
		if err := p.send(request{Run: req}); err != nil {
			p.kill()
			return nil, fmt.Errorf("send a run to a function worker: %w", err)
		}
	}
	// Host calls get the run's deadline, as in process; the worker dies at
	// the deadline plus the grace, or when the caller goes.
	hctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	timer := time.AfterFunc(lim.Timeout+KillGrace, p.kill)
	stop := context.AfterFunc(ctx, p.kill)
	var console strings.Builder
	done, err := p.exchange(hctx, host, lim.Network, &console)
	late, gone := !timer.Stop(), !stop()
	if err != nil || late || gone {
		p.kill()
	} else {
		workers.put(p)
	}
	if err != nil {
		switch {
		case late || errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, &Failure{Reason: ReasonTimeout, Message: "the function ran past its time limit", Console: console.String()}
		case gone:
			return nil, fmt.Errorf("run a function: %w", ctx.Err())
		}
		return nil, fmt.Errorf("run a function in a worker process: %w", err)
	}
	switch {
	case done.Failure != nil:
		return nil, done.Failure
	case done.Error != "":
		return nil, errors.New(done.Error)
	}
	return &Output{Value: done.Value, Console: done.Console, Duration: time.Since(start)}, nil
}

// The protocol: JSON messages, one a line, over the worker's stdin
// (request) and stdout (message). A run is a Run request, then any number
// of Call messages each answered by a Reply, and Log messages, then Done.
type request struct {
	Run   *runRequest `json:"run,omitempty"`
	Reply *hostReply  `json:"reply,omitempty"`
}

type runRequest struct {
	Code    string          `json:"code"`
	Input   json.RawMessage `json:"input"`
	Timeout time.Duration   `json:"timeout"`
	Memory  int64           `json:"memory"`
	Network bool            `json:"network"`
}

type hostReply struct {
	Value string `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

type message struct {
	Hello string    `json:"hello,omitempty"`
	Call  *hostCall `json:"call,omitempty"`
	Log   *string   `json:"log,omitempty"`
	Done  *runDone  `json:"done,omitempty"`
}

type hostCall struct {
	Op  string `json:"op"`
	Arg string `json:"arg"`
}

type runDone struct {
	Value   json.RawMessage `json:"value,omitempty"`
	Console string          `json:"console,omitempty"`
	Failure *Failure        `json:"failure,omitempty"`
	// Error is the host's error (not the function's).
	Error string `json:"error,omitempty"`
}

// pool keeps idle workers.
type pool struct {
	mu      sync.Mutex
	idle    []*proc
	warming bool
}

var workers pool

// get takes an idle worker or starts one, and starts the next ahead of
// need.
func (pl *pool) get() (*proc, error) {
	pl.mu.Lock()
	var p *proc
	if n := len(pl.idle); n > 0 {
		p, pl.idle = pl.idle[n-1], pl.idle[:n-1]
	}
	warm := len(pl.idle) == 0 && !pl.warming
	pl.warming = pl.warming || warm
	pl.mu.Unlock()
	if warm {
		go pl.warm()
	}
	if p != nil {
		return p, nil
	}
	return pl.spawn()
}

// warm starts a worker for the next run.
func (pl *pool) warm() {
	p, err := pl.spawn()
	pl.mu.Lock()
	pl.warming = false
	pl.mu.Unlock()
	if err == nil {
		pl.put(p)
	}
}

// put keeps p for a next run, or ends it when enough are idle.
func (pl *pool) put(p *proc) {
	pl.mu.Lock()
	if len(pl.idle) < maxIdleWorkers {
		pl.idle = append(pl.idle, p)
		p = nil
	}
	pl.mu.Unlock()
	if p != nil {
		p.close()
	}
}

// proc is a worker process as its parent sees it.
type proc struct {
	cmd  *exec.Cmd
	in   *os.File
	enc  *json.Encoder
	dec  *json.Decoder
	once sync.Once
}

// spawn starts a worker and waits for its hello.
func (*pool) spawn() (*proc, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary to start a function worker: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start a function worker: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start a function worker: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	cmd.Env = workerEnviron()
	err = cmd.Start()
	// The child has its ends; closing ours makes a read see EOF when the
	// child dies.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start a function worker: %w", err)
	}
	p := &proc{cmd: cmd, in: inW, enc: json.NewEncoder(inW), dec: json.NewDecoder(bufio.NewReader(outR))}
	go func() {
		_ = cmd.Wait()
		outR.Close()
	}()
	t := time.AfterFunc(spawnTimeout, p.kill)
	var hello message
	err = p.dec.Decode(&hello)
	if !t.Stop() || err != nil || hello.Hello != workerProtocol {
		p.kill()
		return nil, fmt.Errorf("start a function worker: no hello (%v)", err)
	}
	return p, nil
}

// executable is the binary to start as a worker: on Linux the running
// one even when an upgrade has replaced the file.
func executable() (string, error) {
	if goruntime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// workerEnviron is a worker's whole environment: the marker, and nothing
// of the server's (its secrets and settings stay with the server).
func workerEnviron() []string {
	env := []string{workerEnv + "=" + workerProtocol}
	if v, ok := os.LookupEnv("SYSTEMROOT"); ok { // Windows' DLLs need it
		env = append(env, "SYSTEMROOT="+v)
	}
	return env
}

func (p *proc) send(r request) error { return p.enc.Encode(r) }

// kill ends the worker at once.
func (p *proc) kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		p.in.Close()
	})
}

// close ends an idle worker: it exits when its stdin ends.
func (p *proc) close() {
	p.once.Do(func() { p.in.Close() })
}

// exchange answers the worker's calls until it is done; console collects
// what the function printed, for a run killed before it could say.
func (p *proc) exchange(ctx context.Context, host Host, network bool, console *strings.Builder) (*runDone, error) {
	for {
		var m message
		if err := p.dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("read from a function worker: %w", err)
		}
		switch {
		case m.Call != nil:
			v, err := answer(ctx, host, network, m.Call.Op, m.Call.Arg)
			rep := &hostReply{Value: v}
			if err != nil {
				rep.Error = err.Error()
			}
			if err := p.send(request{Reply: rep}); err != nil {
				return nil, fmt.Errorf("answer a function worker: %w", err)
			}
		case m.Log != nil:
			if console.Len()+len(*m.Log) < MaxConsole {
				console.WriteString(*m.Log)
				console.WriteByte('\n')
			}
		case m.Done != nil:
			return m.Done, nil
		default:
			return nil, errors.New("read from a function worker: an empty message")
		}
	}
}

// serveWorker is a worker's life: runs read from stdin until it ends.
func serveWorker(protocol string) int {
	if protocol != workerProtocol {
		fmt.Fprintf(os.Stderr, "function worker: protocol %q, this binary speaks %q\n", protocol, workerProtocol)
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	// Nothing else may write into the protocol.
	os.Stdout = os.Stderr
	w := &worker{dec: json.NewDecoder(bufio.NewReader(os.Stdin)), out: out}
	w.enc = json.NewEncoder(out)
	if err := w.send(message{Hello: workerProtocol}); err != nil {
		return 1
	}
	for {
		var req request
		if err := w.dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "function worker: read a request:", err)
			return 1
		}
		if req.Run == nil {
			fmt.Fprintln(os.Stderr, "function worker: a request that is not a run")
			return 1
		}
		if err := w.run(req.Run); err != nil {
			fmt.Fprintln(os.Stderr, "function worker:", err)
			return 1
		}
	}
}

// worker is a worker's side of the protocol.
type worker struct {
	dec *json.Decoder
	enc *json.Encoder
	out *bufio.Writer
	// broken is the first failure to talk to the parent: the run's
	// answer cannot reach it then.
	broken error
}

func (w *worker) send(m message) error {
	if err := w.enc.Encode(m); err != nil {
		return err
	}
	return w.out.Flush()
}

// run runs one function and sends what it did.
func (w *worker) run(rr *runRequest) error {
	lim := Limits{Timeout: rr.Timeout, Memory: rr.Memory, Network: rr.Network}
	// The parent kills a worker KillGrace past the limit; one whose
	// parent is gone (crashed, killed) ends itself a little later, rather
	// than run on with nobody to answer.
	orphan := time.AfterFunc(lim.Normalized().Timeout+2*KillGrace, func() { os.Exit(3) })
	defer orphan.Stop()
	out, err := QuickJS{}.run(context.Background(), Program{Code: rr.Code}, rr.Input, &workerHost{w: w}, lim)
	if w.broken != nil {
		return w.broken
	}
	d := &runDone{}
	var f *Failure
	switch {
	case errors.As(err, &f):
		d.Failure = f
	case err != nil:
		d.Error = err.Error()
	default:
		d.Value, d.Console = out.Value, out.Console
	}
	return w.send(message{Done: d})
}

// workerHost is the Host of a run in a worker: each call goes to the
// parent, still encoded.
type workerHost struct{ w *worker }

var _ relay = (*workerHost)(nil)

func (h *workerHost) relay(op, arg string) (string, error) {
	w := h.w
	if w.broken != nil {
		return "", w.broken
	}
	if err := w.send(message{Call: &hostCall{Op: op, Arg: arg}}); err != nil {
		w.broken = fmt.Errorf("send a host call: %w", err)
		return "", w.broken
	}
	var req request
	if err := w.dec.Decode(&req); err != nil || req.Reply == nil {
		w.broken = fmt.Errorf("read a host call's answer: %v", err)
		return "", w.broken
	}
	if req.Reply.Error != "" {
		return "", errors.New(req.Reply.Error)
	}
	return req.Reply.Value, nil
}

func (h *workerHost) logged(line string) {
	if h.w.broken == nil {
		if err := h.w.send(message{Log: &line}); err != nil {
			h.w.broken = fmt.Errorf("send a console line: %w", err)
		}
	}
}

// ask is a typed call through relay.
func (h *workerHost) ask(op string, arg, into any) error {
	b, err := json.Marshal(arg)
	if err != nil {
		return fmt.Errorf("host %s: encode the call: %w", op, err)
	}
	s, err := h.relay(op, string(b))
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(s), into)
}

// Get implements Host (the run's calls take relay; these serve any
// other caller the same way).
func (h *workerHost) Get(_ context.Context, id string) (v any, err error) {
	err = h.ask("get", map[string]any{"id": id}, &v)
	return v, err
}

// Query implements Host.
func (h *workerHost) Query(_ context.Context, objectType string, filters map[string]any, limit int) (v any, err error) {
	err = h.ask("query", map[string]any{"type": objectType, "filters": filters, "limit": limit}, &v)
	return v, err
}

// Aggregate implements AggregateHost.
func (h *workerHost) Aggregate(_ context.Context, objectType string, request json.RawMessage) (v any, err error) {
	err = h.ask("aggregate", map[string]any{"type": objectType, "request": request}, &v)
	return v, err
}

// Links implements Host.
func (h *workerHost) Links(_ context.Context, objectID, linkType string) (v any, err error) {
	err = h.ask("links", map[string]any{"id": objectID, "link_type": linkType}, &v)
	return v, err
}

// Fetch implements Host.
func (h *workerHost) Fetch(_ context.Context, req FetchRequest) (*FetchResponse, error) {
	var r FetchResponse
	if err := h.ask("fetch", req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
