package sandbox

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a set of warm workers. A worker belongs to one program at a time: after Program.Close it
// is reused only when its server proved it clean (every other process of its PID namespace killed,
// the scratch space wiped, its limits unchanged: see worker.clean), else it is killed and a
// replacement starts in the background. So nothing a program leaves behind (a process, a file, a
// lowered limit) reaches a later program. Static checks run no generated code and share workers.
// A Pool is safe for concurrent use.
type Pool struct {
	opts    Options
	iso     Isolation
	live    int           // workers alive or starting (idle + held), at most limit
	limit   int           // the most workers alive: opts.Workers, raised by Fit (under mu)
	changed chan struct{} // closed (and replaced) whenever a worker goes idle or a slot frees

	mu       sync.Mutex
	idle     []*worker
	closed   bool
	nextPg   atomic.Int64
	starting sync.WaitGroup // background starts of replacement workers
}

// NewPool resolves the interpreter, picks the isolation layer (probing in auto mode) and
// returns a pool with no workers started yet. With IsolationAuto and nothing that works it
// returns ErrNoIsolation unless AllowUnsafe is set, in which case it falls back to
// IsolationNone.
func NewPool(ctx context.Context, opts Options) (*Pool, error) {
	opts.fill()
	if opts.PythonExe == nil {
		py, err := ResolvePython(ctx, opts.Python)
		if err != nil {
			return nil, err
		}
		opts.PythonExe = py
	}
	p := &Pool{opts: opts, limit: opts.Workers, changed: make(chan struct{})}
	switch opts.Isolation {
	case IsolationNone:
		if !opts.AllowUnsafe {
			return nil, ErrNoIsolation
		}
		p.iso = IsolationNone
	case IsolationBwrap, IsolationNamespaces, IsolationLandlock:
		w, err := startWorker(ctx, &p.opts, opts.Isolation)
		if err != nil {
			return nil, fmt.Errorf("sandbox: isolation %s does not work here: %w", opts.Isolation, err)
		}
		p.iso = opts.Isolation
		p.idle = append(p.idle, w)
	case IsolationAuto:
		var failures []string
		for _, iso := range layers {
			w, err := startWorker(ctx, &p.opts, iso)
			if err == nil {
				p.iso = iso
				p.idle = append(p.idle, w)
				break
			}
			failures = append(failures, err.Error())
		}
		if p.iso == "" {
			if !opts.AllowUnsafe {
				return nil, fmt.Errorf("%w (%v)", ErrNoIsolation, failures)
			}
			p.iso = IsolationNone
		}
	default:
		return nil, fmt.Errorf("sandbox: unknown isolation %q (want auto, bwrap, namespaces, landlock or none)", opts.Isolation)
	}
	p.live = len(p.idle)
	return p, nil
}

// Isolation returns the layer in force.
func (p *Pool) Isolation() Isolation { return p.iso }

// Python returns the resolved interpreter.
func (p *Pool) Python() *Python { return p.opts.PythonExe }

// Options returns the pool's options with defaults filled in.
func (p *Pool) Options() Options { return p.opts }

// acquire returns an idle worker or starts one, waiting while Workers are busy. A waiter wakes both when
// a worker is released to the idle list and when a dead worker frees its slot.
func (p *Pool) acquire(ctx context.Context) (*worker, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		for len(p.idle) > 0 {
			w := p.idle[len(p.idle)-1]
			p.idle = p.idle[:len(p.idle)-1]
			if !w.isDead() {
				p.mu.Unlock()
				return w, nil
			}
			p.live-- // a worker that died while idle frees its slot
		}
		if p.live < p.limit {
			p.live++
			o := p.workerOptions()
			p.mu.Unlock()
			w, err := startWorker(ctx, o, p.iso)
			if err != nil {
				p.mu.Lock()
				p.live--
				p.broadcast()
				p.mu.Unlock()
				return nil, err
			}
			return w, nil
		}
		wait := p.changed
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// broadcast wakes every acquire waiting for a worker; the caller holds p.mu.
func (p *Pool) broadcast() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// release returns a worker to the idle list, or kills it (and frees its slot) when it is
// tainted or dead: a tainted worker may still hold a runaway process or daemon.
func (p *Pool) release(w *worker) {
	p.mu.Lock()
	if !p.closed && !w.tainted.Load() && !w.spent.Load() && !w.isDead() {
		p.idle = append(p.idle, w)
		p.broadcast()
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	// The worker's slot frees only once it is gone with every process it held: on a host-wide
	// process limit (the landlock layer's RLIMIT_NPROC, a container's pids limit) a fork bomb
	// still dying would make the next worker's forks fail.
	w.markDead(&Error{Kind: KindCrash, Op: "worker", Msg: "worker recycled"})
	select {
	case <-w.waited:
	case <-time.After(5 * time.Second):
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.broadcast()
	p.live--
	if !p.closed && w.spent.Load() && p.live < p.limit {
		p.startSpare()
	}
}

// workerOptions returns the options a new worker starts with: the pool's, with Workers at the limit in
// force (Fit may have raised it), since the landlock layer's process budget of a worker counts every
// worker of the pool; the caller holds p.mu.
func (p *Pool) workerOptions() *Options {
	o := p.opts
	o.Workers = p.limit
	return &o
}

// startSpare starts a worker in the background to replace one a program used, so the next Load
// finds a warm worker; the caller holds p.mu.
func (p *Pool) startSpare() {
	p.live++
	p.starting.Add(1)
	o := p.workerOptions()
	go func() {
		defer p.starting.Done()
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.StartTimeout)
		defer cancel()
		w, err := startWorker(ctx, o, p.iso)
		p.mu.Lock()
		defer p.mu.Unlock()
		defer p.broadcast()
		if err != nil || p.closed {
			if w != nil {
				w.markDead(&Error{Kind: KindCrash, Op: "worker", Msg: "pool closed"})
				<-w.waited
			}
			p.live--
			return
		}
		p.idle = append(p.idle, w)
	}()
}

// Close kills every idle worker (and waits for replacements being started); workers held by
// open programs die when those close.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	p.broadcast()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.markDead(&Error{Kind: KindCrash, Op: "worker", Msg: "pool closed"})
		<-w.waited
	}
	p.starting.Wait()
	return nil
}

// Check runs the static checks on code in a sandboxed child and returns the problems found
// (empty when it passes). A non-nil error means the check itself could not run.
func (p *Pool) Check(ctx context.Context, code, setting string, rules StaticRules) ([]string, error) {
	w, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(w)
	key := fmt.Sprintf("c%d", p.nextPg.Add(1))
	ch, err := w.spawn(ctx, key, map[string]any{"mode": "check", "setting": setting, "allow": rules.AllowedImports, "flagged": rules.FlaggedNames, "flagged_attrs": rules.FlaggedAttributes}, unix.SOCK_SEQPACKET)
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	defer w.closeKey(key)
	err = ch.sendCode(code, loadTimeout(ctx, p.opts.LoadTimeout))
	var r reply
	if err == nil {
		r, err = ch.roundTrip(nil, loadTimeout(ctx, p.opts.LoadTimeout), p.opts)
	}
	if err != nil {
		return nil, w.explain("check", key, 0, err)
	}
	if r.Problems == nil {
		return []string{}, nil
	}
	return r.Problems, nil
}

// spawn asks the server to fork a child (a template or a check) that talks on a new
// socketpair of the given type, and returns our end.
func (w *worker) spawn(ctx context.Context, key string, req map[string]any, sockType int) (*channel, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, sockType|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), key), os.NewFile(uintptr(pair[1]), key+"-child")
	defer theirs.Close()
	req["key"] = key
	if _, err := w.callWithSocket(ctx, "spawn", req, w.opts.LoadTimeout, theirs); err != nil {
		ours.Close()
		return nil, err
	}
	return newChannel(ours, sockType == unix.SOCK_SEQPACKET)
}

// closeKey kills a spawned child's process group and returns what the server saw of it.
func (w *worker) closeKey(key string) reply {
	if w.isDead() {
		return reply{}
	}
	r, err := w.call(context.Background(), "close", map[string]any{"key": key}, 2*time.Second)
	if err != nil {
		w.markDead(&Error{Kind: KindCrash, Op: "close", Msg: "worker did not answer close: " + err.Error()})
	}
	return r
}

// explain turns a channel failure into a typed *Error, asking the server what it saw of the
// program (captured output, overflow) and killing the failed instance (pid > 0) or child.
func (w *worker) explain(op, key string, pid int, cause error) error {
	if w.checkMemory() != nil {
		// over the worker's memory limit when the call failed (a deadline that passed while the
		// program's processes filled memory included): a memory error, as the watchdog says
		return w.deadErrFor(op)
	}
	var se *Error
	if errors.As(cause, &se) && (se.Kind == KindEnv || se.Kind == KindMemory) {
		// The program raised, but it may have started processes that outlive the instance (a fork
		// bomb stopped by the process limit leaves its children spinning at that limit, and the next
		// program's instances could not fork): recycle the worker when the program closes.
		w.tainted.Store(true)
		c := *se
		c.Op = op
		return &c
	}
	e := &Error{Op: op}
	switch {
	case errors.As(cause, &se):
		e.Kind, e.Msg, e.Trace = se.Kind, se.Msg, se.Trace
	case errors.Is(cause, os.ErrDeadlineExceeded):
		e.Kind, e.Msg = KindTimeout, "no reply before the deadline"
	case errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrUnexpectedEOF) || errors.Is(cause, syscall.ECONNRESET) || errors.Is(cause, syscall.EPIPE):
		e.Kind, e.Msg = KindCrash, "env process ended"
	default:
		e.Kind, e.Msg = KindProtocol, cause.Error()
	}
	if e.Kind != KindEnv && e.Kind != KindMemory && e.Kind != KindOutput {
		w.tainted.Store(true)
	}
	if w.isDead() {
		return w.deadErrFor(op)
	}
	if pid > 0 {
		_, _ = w.call(context.Background(), "kill", map[string]any{"key": key, "pid": pid}, 2*time.Second)
	}
	r, err := w.call(context.Background(), "output", map[string]any{"key": key}, 2*time.Second)
	if err == nil {
		e.Output = r.Out
		if r.Overflow {
			e.Kind = KindOutput
			e.Msg = fmt.Sprintf("env wrote %d bytes to stdout/stderr, over the cap of %d", r.OutTotal, w.opts.OutputCap)
		} else if e.Kind == KindCrash && r.Status != "" && r.Status != "running" {
			e.Msg += " (" + r.Status + ")"
		}
	}
	return e
}

// Program is a loaded environment program: a template process in a worker dedicated to it
// until Close, which forks one instance per NewEnv.
type Program struct {
	pool     *Pool
	w        *worker
	key      string
	template *channel
	// Class is the name of the program's env class.
	Class string
	// HasTools reports whether the class defines tools().
	HasTools bool
	// StaticTime is how long the static check took in the template (LoadChecked; 0 after Load).
	StaticTime time.Duration

	mu     sync.Mutex
	envs   map[*Env]bool
	closed bool
}

// Load acquires a worker and executes code once as a module in a sandboxed template process,
// which finds the env class. A failure of the program itself is an *Error; the worker is then
// released already.
func (p *Pool) Load(ctx context.Context, code string) (*Program, error) {
	prog, _, err := p.load(ctx, code, nil)
	return prog, err
}

// LoadTrusted is Load for a program of spade's own, such as a scorer that compiles and runs answers
// itself inside its sandbox: its module gets the real builtins and imports, where a generated program's
// get a copy without eval, exec and compile and an __import__ limited to its own import statements
// (docs/sandbox.md, "What a program's code can reach of the harness"). Everything else is as for Load.
func (p *Pool) LoadTrusted(ctx context.Context, code string) (*Program, error) {
	prog, _, err := p.load(ctx, code, map[string]any{"trusted": true})
	return prog, err
}

// LoadChecked is Check and then Load in one child: the template runs the static check on the source
// it received before any of the program's code runs there, and executes the program only when the
// check found nothing. problems non-empty means the program was refused and never executed (the
// Program is nil and the worker is released). One process instead of two, which is most of what a
// check costs (the gate's first two checks). Program.StaticTime is the check's share of the call.
func (p *Pool) LoadChecked(ctx context.Context, code, setting string, rules StaticRules) (*Program, []string, error) {
	return p.load(ctx, code, map[string]any{"static": map[string]any{"setting": setting, "allow": rules.AllowedImports,
		"flagged": rules.FlaggedNames, "flagged_attrs": rules.FlaggedAttributes}})
}

// load is Load with extra fields of the template's spawn request: "static" (LoadChecked: the static
// check's lists, run before the program) or "trusted" (LoadTrusted).
func (p *Pool) load(ctx context.Context, code string, extra map[string]any) (*Program, []string, error) {
	w, err := p.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	w.spent.Store(!p.opts.unhardened) // from here on the worker is this program's until proved clean
	key := fmt.Sprintf("p%d", p.nextPg.Add(1))
	req := map[string]any{"mode": "template"}
	maps.Copy(req, extra)
	ch, err := w.spawn(ctx, key, req, unix.SOCK_SEQPACKET)
	if err != nil {
		p.release(w)
		return nil, nil, err
	}
	err = ch.sendCode(code, loadTimeout(ctx, p.opts.LoadTimeout))
	var r reply
	if err == nil {
		r, err = ch.roundTrip(nil, loadTimeout(ctx, p.opts.LoadTimeout), p.opts)
	}
	if err == nil {
		err = w.checkMemoryAfterReply()
	}
	if err != nil || len(r.Problems) > 0 {
		if err != nil {
			err = w.explain("load", key, 0, err)
		}
		ch.Close()
		w.closeKey(key)
		w.clean()
		p.release(w)
		return nil, r.Problems, err
	}
	return &Program{pool: p, w: w, key: key, template: ch, Class: r.Class, HasTools: r.HasTools, envs: map[*Env]bool{},
		StaticTime: time.Duration(r.StaticSeconds * float64(time.Second))}, nil, nil
}

// NewEnv forks a fresh instance from the program's template and instantiates the class there.
func (g *Program) NewEnv(ctx context.Context) (*Env, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	if g.w.isDead() {
		return nil, g.w.deadErrFor("new")
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	if err := unix.SetsockoptInt(pair[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(pair[0])
		unix.Close(pair[1])
		return nil, fmt.Errorf("sandbox: SO_PASSCRED: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "env"), os.NewFile(uintptr(pair[1]), "env-child")
	err = g.template.sendFD([]byte("fork"), theirs)
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, g.w.explain("new", g.key, 0, err)
	}
	ch, err := newCredChannel(ours)
	if err != nil {
		return nil, err
	}
	r, err := ch.roundTrip(nil, loadTimeout(ctx, g.pool.opts.LoadTimeout), g.pool.opts)
	if err == nil {
		err = g.w.checkMemoryAfterReply()
	}
	if err != nil {
		ch.Close()
		return nil, g.w.explain("new", g.key, r.PID, err)
	}
	e := &Env{prog: g, ch: ch, pid: r.PID, hostPID: int(ch.creds.first)}
	g.envs[e] = true
	return e, nil
}

// Close closes every env of the program, kills the program's processes and releases its
// worker (which is recycled when tainted).
func (g *Program) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	envs := make([]*Env, 0, len(g.envs))
	for e := range g.envs {
		envs = append(envs, e)
	}
	g.mu.Unlock()
	for _, e := range envs {
		e.Close()
	}
	g.template.Close()
	g.w.closeKey(g.key)
	g.w.clean()
	g.pool.release(g.w)
	return nil
}

// clean asks the server of a worker that ran a program to make it as it was before (see the
// harness's Server.clean) and, when it did, lets the worker serve another program. On a layer
// without a PID namespace of its own (landlock, none) the server cannot see every process a
// program started, and with Options.FreshWorkers, the worker is never reused.
func (w *worker) clean() {
	if w.opts.FreshWorkers || w.isDead() || w.tainted.Load() || (w.iso != IsolationBwrap && w.iso != IsolationNamespaces) {
		return
	}
	r, err := w.call(context.Background(), "clean", map[string]any{}, 5*time.Second)
	if err != nil || len(r.Problems) > 0 {
		w.tainted.Store(true)
		return
	}
	w.spent.Store(false)
}

// Output returns the tail of what the program's processes printed (capped).
func (g *Program) Output(ctx context.Context) (string, error) {
	r, err := g.w.call(ctx, "output", map[string]any{"key": g.key}, 2*time.Second)
	return r.Out, err
}

// Tainted reports whether the program's worker saw a timeout, crash or protocol error and
// will be replaced when the program closes.
func (g *Program) Tainted() bool { return g.w.tainted.Load() }

// Env is one env instance (one forked process) that Go talks to directly. Calls on an Env must
// not overlap.
type Env struct {
	prog    *Program
	ch      *channel
	pid     int // the instance's pid in its worker, as it says (the server kills only its program's)
	hostPID int // the instance's pid here, as the kernel says (SO_PASSCRED on its hello)
	mu      sync.Mutex
	closed  bool
	err     error
	cpu     float64 // the newest CPU seconds read of the instance
}

// StepResult is what step returned.
type StepResult struct {
	// Observation is the next observation (at most ObservationCap bytes).
	Observation string
	// Reward is the step's reward, finite.
	Reward float64
	// Done reports the end of the episode: Terminated or Truncated.
	Done bool
	// Terminated is Gymnasium's terminated (the episode reached an end state of the env's MDP: its
	// goal, or a loss); a step in the old 4-tuple shape reports its done here. Truncated is Gymnasium's
	// truncated (the env cut the episode short, its own time limit), false for a 4-tuple.
	Terminated, Truncated bool
	// Shape says which contract the step followed and how it departed from the authors' types.
	Shape StepShape
	// Info is the step's info dict as JSON ({} when the env returned None).
	Info json.RawMessage
}

// StepShape is what a step returned, as the harness saw it before reading it.
type StepShape struct {
	// Arity is 5 for Gymnasium's (observation, reward, terminated, truncated, info), 4 for the old
	// (observation, reward, done, info).
	Arity int `json:"arity"`
	// Deviations lists the departures from the types the authors' validator wants (terminated or
	// truncated not a bool, a reward that is neither int nor float, an info that is not a dict), each
	// of which the harness read anyway; empty when there is none.
	Deviations []string `json:"deviations"`
}

// Legacy reports whether the step came from a program in the old 4-tuple shape.
func (s StepShape) Legacy() bool { return s.Arity == 4 }

// Success reports info["success"] when present, else whether the terminal reward is ≥ 1
// (the environment program contract, docs/architecture.md, "Contracts"). Meaningful when Done; an
// episode the env truncated (Truncated and not Terminated) did not succeed, whatever info says.
func (s StepResult) Success() bool {
	if s.Truncated && !s.Terminated {
		return false
	}
	var info map[string]any
	if json.Unmarshal(s.Info, &info) == nil {
		if v, ok := info["success"]; ok {
			b, isBool := v.(bool)
			return isBool && b
		}
	}
	return s.Reward >= 1
}

// do runs one call on the env, bounded by timeout and by ctx: a cancelled ctx ends the call at once
// with an error that wraps ctx.Err(). Any failure other than an exception in the env (KindEnv),
// cancellation included, kills the instance and closes the Env.
func (e *Env) do(ctx context.Context, op string, req map[string]any, timeout time.Duration) (reply, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		if e.err != nil {
			return reply{}, e.err
		}
		return reply{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return reply{}, fmt.Errorf("sandbox: %s: %w", op, err)
	}
	req["op"] = op
	// a cancelled ctx ends the wait at once: the socket's deadline moves to now, and the instance,
	// left in the middle of a call, is killed below as after a timeout
	stop := context.AfterFunc(ctx, func() { _ = e.ch.conn.SetDeadline(time.Now()) })
	r, err := e.ch.roundTrip(req, timeout, e.prog.pool.opts)
	cancelled := !stop() && err != nil && ctx.Err() != nil
	if err == nil {
		// what the program's processes hold when the reply came decides, whoever won the race
		err = e.prog.w.checkMemoryAfterReply()
	}
	if err == nil && len(r.Obs) > e.prog.pool.opts.ObservationCap {
		// the cap holds on the bytes we received, whatever the harness in the instance was made to check
		err = &Error{Kind: KindOutput, Msg: fmt.Sprintf("observation of %d bytes exceeds the cap of %d", len(r.Obs), e.prog.pool.opts.ObservationCap)}
	}
	if err == nil {
		err = checkText(op, r)
	}
	if size := max(len(r.Info), len(r.Tools), len(r.Value)); err == nil && size > e.prog.pool.opts.InfoCap {
		err = &Error{Kind: KindOutput, Msg: fmt.Sprintf("%s's result of %d bytes exceeds the cap of %d", op, size, e.prog.pool.opts.InfoCap)}
	}
	if err != nil {
		e.cpu = max(e.cpu, e.readCPU()) // before a failed instance is killed
	}
	if err != nil {
		err = e.prog.w.explain(op, e.prog.key, e.pid, err)
		if cancelled {
			err = fmt.Errorf("sandbox: %s: %w", op, ctx.Err())
		}
		var se *Error
		if !errors.As(err, &se) || se.Kind != KindEnv {
			e.closed, e.err = true, err
			e.ch.Close()
		}
		return r, err
	}
	return r, nil
}

// Reset calls env.reset(seed) and returns the observation.
func (e *Env) Reset(ctx context.Context, seed int64) (string, error) {
	obs, _, err := e.ResetShaped(ctx, seed)
	return obs, err
}

// ResetShaped calls env.reset(seed) as Reset does and also returns the departures of what reset
// returned from the types the authors' validation wants (an (observation, None) pair: "info is None,
// not a dict"), which the harness reads anyway; empty when there is none.
func (e *Env) ResetShaped(ctx context.Context, seed int64) (string, []string, error) {
	r, err := e.do(ctx, "reset", map[string]any{"seed": seed}, e.timeout(ctx, loadTimeout(ctx, e.prog.pool.opts.ResetTimeout)))
	return r.Obs, r.Shape.Deviations, err
}

// loadTimeoutKey is the context key of WithLoadTimeout.
type loadTimeoutKey struct{}

// WithLoadTimeout returns a context under which the calls that Options.LoadTimeout and
// Options.ResetTimeout bound (check, load, new instance, reset) have d instead: the gate validates
// programs under a longer load deadline than play gives them, on the same pool.
func WithLoadTimeout(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, loadTimeoutKey{}, d)
}

// loadTimeout returns the deadline WithLoadTimeout set on ctx, else d.
func loadTimeout(ctx context.Context, d time.Duration) time.Duration {
	if v, ok := ctx.Value(loadTimeoutKey{}).(time.Duration); ok {
		return v
	}
	return d
}

// Step calls env.step(action).
func (e *Env) Step(ctx context.Context, action string) (StepResult, error) {
	if len(action) > e.prog.pool.opts.ActionCap {
		return StepResult{}, &Error{Kind: KindOutput, Op: "step", Msg: fmt.Sprintf("action of %d bytes exceeds the cap of %d", len(action), e.prog.pool.opts.ActionCap)}
	}
	r, err := e.do(ctx, "step", map[string]any{"action": action}, e.timeout(ctx, e.prog.pool.opts.StepTimeout))
	if err != nil {
		return StepResult{}, err
	}
	if math.IsNaN(r.Reward) || math.IsInf(r.Reward, 0) {
		return StepResult{}, &Error{Kind: KindEnv, Op: "step", Msg: "non-finite reward"}
	}
	if len(r.Info) == 0 {
		r.Info = json.RawMessage("{}")
	}
	return StepResult{Observation: r.Obs, Reward: r.Reward, Done: r.Done, Terminated: r.Terminated, Truncated: r.Truncated,
		Shape: r.Shape, Info: r.Info}, nil
}

// Solution calls env.solution(), the authors' reference action sequence (or goal description), and
// returns its text; a program without one gives a KindEnv error.
func (e *Env) Solution(ctx context.Context) (string, error) {
	r, err := e.do(ctx, "solution", map[string]any{}, e.timeout(ctx, e.prog.pool.opts.ResetTimeout))
	var text string
	if err == nil && json.Unmarshal(r.Value, &text) != nil {
		return "", &Error{Kind: KindEnv, Op: "solution", Msg: "solution() did not give text"}
	}
	return text, err
}

// Tools calls env.tools() and returns its JSON.
func (e *Env) Tools(ctx context.Context) (json.RawMessage, error) {
	r, err := e.do(ctx, "tools", map[string]any{}, e.timeout(ctx, e.prog.pool.opts.ResetTimeout))
	return r.Tools, err
}

// Eval calls env.method(*args) and returns its JSON result (the gate uses it for the tools
// setting's success conditions).
func (e *Env) Eval(ctx context.Context, method string, args ...any) (json.RawMessage, error) {
	if args == nil {
		args = []any{}
	}
	r, err := e.do(ctx, "eval", map[string]any{"method": method, "args": args}, e.timeout(ctx, e.prog.pool.opts.ResetTimeout))
	return r.Value, err
}

// timeout is the call's deadline: the op's own, or less when ctx ends sooner.
func (e *Env) timeout(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < d {
			return max(left, time.Millisecond)
		}
	}
	return d
}

// CPUSeconds returns the CPU time (user + system, in seconds, whole clock ticks) the instance's
// process and the processes below it have spent since it was forked: its warm-up as a spare (a few
// milliseconds at most), its __init__, reset, step, tools and eval calls, and its children's, running,
// exited or waited for (a process that left the tree, a daemon, is the worker clean's to kill). We read
// it from the kernel (/proc/PID/stat of the process that sent the instance's replies and of its
// descendants), never from the instance. After the env is closed it
// is the value read last (call it before Close); after a failed call that killed the instance, the
// value read just before the kill.
func (e *Env) CPUSeconds() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.cpu = max(e.cpu, e.readCPU())
	}
	return e.cpu
}

// readCPU reads the instance's CPU seconds from /proc (0 when it cannot).
func (e *Env) readCPU() float64 {
	if e.hostPID <= 0 {
		return 0
	}
	return treeCPUSeconds(e.hostPID)
}

// Close ends the instance: it exits when its socket closes (a stuck one was killed already).
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		e.ch.Close()
	}
	e.prog.mu.Lock()
	delete(e.prog.envs, e)
	e.prog.mu.Unlock()
	return nil
}
