package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a set of warm workers. Each worker hosts one program at a time (Load to
// Program.Close), so a program that attacks its own worker harms only its own episodes.
// A Pool is safe for concurrent use.
type Pool struct {
	opts  Options
	iso   Isolation
	slots chan struct{} // one token per live-or-startable worker

	mu     sync.Mutex
	idle   []*worker
	closed bool
	nextPg atomic.Int64
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
	p := &Pool{opts: opts, slots: make(chan struct{}, opts.Workers)}
	switch opts.Isolation {
	case IsolationNone:
		if !opts.AllowUnsafe {
			return nil, ErrNoIsolation
		}
		p.iso = IsolationNone
	case IsolationBwrap, IsolationNamespaces:
		w, err := startWorker(ctx, &p.opts, opts.Isolation)
		if err != nil {
			return nil, fmt.Errorf("sandbox: isolation %s does not work here: %w", opts.Isolation, err)
		}
		p.iso = opts.Isolation
		p.idle = append(p.idle, w)
	case IsolationAuto:
		var failures []string
		for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces} {
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
		return nil, fmt.Errorf("sandbox: unknown isolation %q (want auto, bwrap, namespaces or none)", opts.Isolation)
	}
	if len(p.idle) > 0 {
		p.slots <- struct{}{}
	}
	return p, nil
}

// Isolation returns the layer in force.
func (p *Pool) Isolation() Isolation { return p.iso }

// Python returns the resolved interpreter.
func (p *Pool) Python() *Python { return p.opts.PythonExe }

// Options returns the pool's options with defaults filled in.
func (p *Pool) Options() Options { return p.opts }

// acquire returns an idle worker or starts one, waiting while Workers are busy.
func (p *Pool) acquire(ctx context.Context) (*worker, error) {
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
		<-p.slots
	}
	p.mu.Unlock()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// a worker may have been released while we waited for a slot
	p.mu.Lock()
	if len(p.idle) > 0 {
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		p.mu.Unlock()
		<-p.slots
		if !w.isDead() {
			return w, nil
		}
		return p.acquire(ctx)
	}
	p.mu.Unlock()
	w, err := startWorker(ctx, &p.opts, p.iso)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return w, nil
}

// release returns a worker to the idle list, or kills it (and frees its slot) when it is
// tainted or dead: a tainted worker may still hold a runaway process or daemon.
func (p *Pool) release(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || w.tainted.Load() || w.isDead() {
		w.markDead(&Error{Kind: KindCrash, Op: "worker", Msg: "worker recycled"})
		<-p.slots
		return
	}
	p.idle = append(p.idle, w)
}

// Close kills every idle worker; workers held by open programs die when those close.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, w := range p.idle {
		w.markDead(&Error{Kind: KindCrash, Op: "worker", Msg: "pool closed"})
		<-w.waited
	}
	p.idle = nil
	return nil
}

// Check runs the static checks on code in a sandboxed child and returns the problems found
// (nil when it passes). A non-nil error means the check itself could not run.
func (p *Pool) Check(ctx context.Context, code, setting string, allow, flagged []string) ([]string, error) {
	w, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(w)
	r, err := w.call(ctx, "check", map[string]any{"code": code, "setting": setting, "allow": allow, "flagged": flagged}, p.opts.LoadTimeout)
	if err != nil {
		return nil, err
	}
	if r.Problems == nil {
		return []string{}, nil
	}
	return r.Problems, nil
}

// Program is a loaded environment program bound to one worker until Close.
type Program struct {
	pool *Pool
	w    *worker
	id   int64
	// Class is the name of the program's env class.
	Class string
	// HasTools reports whether the class defines tools().
	HasTools bool

	mu     sync.Mutex
	envs   map[int64]*Env
	closed bool
}

// Load acquires a worker, executes code as a module in a sandboxed child, and finds its env
// class. A failure of the program itself is an *Error (the worker is released already).
func (p *Pool) Load(ctx context.Context, code string) (*Program, error) {
	w, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	id := p.nextPg.Add(1)
	r, err := w.call(ctx, "load", map[string]any{"prog": id, "code": code}, p.opts.LoadTimeout)
	if err != nil {
		p.release(w)
		return nil, err
	}
	return &Program{pool: p, w: w, id: id, Class: r.Class, HasTools: r.HasTools, envs: map[int64]*Env{}}, nil
}

// NewEnv forks a fresh child that executes the program and instantiates its class.
func (g *Program) NewEnv(ctx context.Context) (*Env, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, ErrClosed
	}
	envID := g.w.nextEnv.Add(1)
	e := &Env{prog: g, id: envID}
	g.envs[envID] = e
	g.mu.Unlock()
	if _, err := g.w.call(ctx, "new", map[string]any{"prog": g.id, "env": envID}, g.pool.opts.LoadTimeout); err != nil {
		e.closeAfter(err)
		return nil, err
	}
	return e, nil
}

// Close closes every env of the program and releases its worker (recycling it when tainted).
func (g *Program) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	envs := make([]*Env, 0, len(g.envs))
	for _, e := range g.envs {
		envs = append(envs, e)
	}
	g.mu.Unlock()
	for _, e := range envs {
		e.Close()
	}
	if !g.w.isDead() && !g.w.tainted.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if _, err := g.w.call(ctx, "unload", map[string]any{"prog": g.id}, 2*time.Second); err != nil {
			g.w.tainted.Store(true)
		}
		cancel()
	}
	g.pool.release(g.w)
	return nil
}

// Tainted reports whether the program's worker saw a timeout, crash or protocol error and
// will be replaced when the program closes.
func (g *Program) Tainted() bool { return g.w.tainted.Load() }

// Env is one env instance (one forked child). Calls on an Env must not overlap.
type Env struct {
	prog   *Program
	id     int64
	mu     sync.Mutex
	closed bool
	err    error
}

// StepResult is what step returned.
type StepResult struct {
	// Observation is the next observation (at most ObservationCap bytes).
	Observation string
	// Reward is the step's reward, finite.
	Reward float64
	// Done reports the end of the episode.
	Done bool
	// Info is the step's info dict as JSON ({} when the env returned None).
	Info json.RawMessage
	// Output is what the env printed during the call (tail, capped).
	Output string
}

// Success reports info["success"] when present, else whether the terminal reward is ≥ 1
// (DESIGN §7). Meaningful when Done.
func (s StepResult) Success() bool {
	var info map[string]any
	if json.Unmarshal(s.Info, &info) == nil {
		if v, ok := info["success"]; ok {
			b, isBool := v.(bool)
			return isBool && b
		}
	}
	return s.Reward >= 1
}

// do runs one call on the env; a timeout, crash or protocol error closes the env.
func (e *Env) do(ctx context.Context, op string, req map[string]any, timeout time.Duration) (reply, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		if e.err != nil {
			return reply{}, e.err
		}
		return reply{}, ErrClosed
	}
	req["env"] = e.id
	r, err := e.prog.w.call(ctx, op, req, timeout)
	if err != nil {
		if se, ok := err.(*Error); !ok || se.Kind != KindEnv {
			e.killLocked(err)
		}
	}
	return r, err
}

// Reset calls env.reset(seed) and returns the observation.
func (e *Env) Reset(ctx context.Context, seed int64) (string, error) {
	r, err := e.do(ctx, "reset", map[string]any{"seed": seed}, e.prog.pool.opts.ResetTimeout)
	return r.Obs, err
}

// Step calls env.step(action).
func (e *Env) Step(ctx context.Context, action string) (StepResult, error) {
	if len(action) > e.prog.pool.opts.ActionCap {
		return StepResult{}, &Error{Kind: KindOutput, Op: "step", Msg: fmt.Sprintf("action of %d bytes exceeds the cap of %d", len(action), e.prog.pool.opts.ActionCap)}
	}
	r, err := e.do(ctx, "step", map[string]any{"action": action}, e.prog.pool.opts.StepTimeout)
	if err != nil {
		return StepResult{}, err
	}
	if math.IsNaN(r.Reward) || math.IsInf(r.Reward, 0) {
		return StepResult{}, &Error{Kind: KindEnv, Op: "step", Msg: "non-finite reward"}
	}
	return StepResult{Observation: r.Obs, Reward: r.Reward, Done: r.Done, Info: r.Info, Output: r.Out}, nil
}

// Tools calls env.tools() and returns its JSON.
func (e *Env) Tools(ctx context.Context) (json.RawMessage, error) {
	r, err := e.do(ctx, "tools", map[string]any{}, e.prog.pool.opts.ResetTimeout)
	return r.Tools, err
}

// Eval calls env.method(*args) and returns its JSON result (the gate uses it for the tools
// setting's success conditions).
func (e *Env) Eval(ctx context.Context, method string, args ...any) (json.RawMessage, error) {
	if args == nil {
		args = []any{}
	}
	r, err := e.do(ctx, "eval", map[string]any{"method": method, "args": args}, e.prog.pool.opts.ResetTimeout)
	return r.Value, err
}

// Close kills the env's process. It is safe to call more than once.
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.killLocked(nil)
	return nil
}

func (e *Env) closeAfter(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.killLocked(err)
}

func (e *Env) killLocked(err error) {
	if e.closed {
		return
	}
	e.closed = true
	e.err = err
	g := e.prog
	g.mu.Lock()
	delete(g.envs, e.id)
	g.mu.Unlock()
	if g.w.isDead() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, cerr := g.w.call(ctx, "close", map[string]any{"env": e.id}, 2*time.Second); cerr != nil {
		// the worker does not answer even a close: it is broken, end it now
		g.w.markDead(&Error{Kind: KindCrash, Op: "close", Msg: "worker did not answer close: " + cerr.Error()})
	}
}
