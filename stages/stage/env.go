package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
)

// Env is what every stage runs with, built once per process (NewEnv): the run, its configuration read
// once, this process's shard, and the dependencies the stages share (one LLM client per weights version,
// one sandbox pool), made on first use and released by Close.
type Env struct {
	// Lake and Run name the run; Config is its run.json.
	Lake   *lake.Lake
	Run    string
	Config *config.Config
	// Shard is this process's share of the step (shard.All when unsharded).
	Shard shard.Spec
	// Force makes a stage redo a step it already committed (unsharded only).
	Force bool
	// Log receives every stage's progress; nil discards it (see Logger).
	Log *slog.Logger
	// Progress is where stages report how far long work is (progress.Reporter: a bar with count, rate and
	// time left on a terminal, log lines at a sensible rate otherwise); nil reports nothing.
	Progress *progress.Reporter
	// TrainerLog receives the trainer's output; TrainerDir keeps its per-step files ("" = a temporary
	// directory per step).
	TrainerLog io.Writer
	TrainerDir string
	// Resume makes Execute run a stage that is not done as if forced, so whatever is committed at the step
	// under the stage's name without its marker (a lake upgraded from per-partition manifests can hold a
	// killed attempt's turns without its episodes) is replaced by the re-run's rows, never kept beside rows
	// it does not belong with. `spade run` sets it; it needs an unsharded Env.
	Resume bool
	// Weights, when set, names the served weights every LLM call of this process uses instead of the
	// newest published ones (see WeightsVersion).
	Weights string
	// UnsafeNoIsolation lets the sandbox run generated code without isolation when no layer works.
	UnsafeNoIsolation bool
	// Txn is the transaction of the stage being run at its step: Execute opens it and sets it on the
	// copy of the Env it hands Stage.Run, and commits it when Run returns. Nil outside Run.
	Txn *lake.Txn

	shared *shared
}

// shared holds the dependencies made on first use; copies of an Env (WithForce) share them.
type shared struct {
	mu      sync.Mutex
	clients map[string]*clientEntry
	pool    *sandbox.Pool
	// client and pool are injected by SetClient and SetPool (tests, embedding): used for every weights
	// version, never closed by Close.
	client       *llm.Client
	injectedPool bool
	// kept holds what Keep made, closed by Close in the reverse order of making.
	kept      map[string]io.Closer
	keptOrder []string
}

// clientEntry is a client and the roles already checked against their endpoints.
type clientEntry struct {
	client  *llm.Client
	checked []schemas.Role
}

// NewEnv reads run's configuration from lk once and returns an unsharded, unforced Env logging to log.
func NewEnv(ctx context.Context, lk *lake.Lake, run string, log *slog.Logger) (*Env, error) {
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		return nil, err
	}
	return &Env{Lake: lk, Run: run, Config: cfg, Shard: shard.All, Log: log}, nil
}

// Logger returns Log, or a logger that discards everything.
func (e *Env) Logger() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return e.Log
}

// WithForce returns a copy of e with Force set to force, sharing e's clients and pool.
func (e *Env) WithForce(force bool) *Env {
	c := *e
	c.shared = e.deps()
	c.Force = force
	return &c
}

// withTxn returns a copy of e whose Txn is tx, sharing e's clients and pool.
func (e *Env) withTxn(tx *lake.Txn) *Env {
	c := *e
	c.shared = e.deps()
	c.Txn = tx
	return &c
}

func (e *Env) deps() *shared {
	if e.shared == nil {
		e.shared = &shared{clients: map[string]*clientEntry{}}
	}
	return e.shared
}

// SetClient makes every stage of e call c (tests and embedding); Close leaves it open.
func (e *Env) SetClient(c *llm.Client) { e.deps().client = c }

// SetPool makes every stage of e run programs in p (tests and embedding); Close leaves it open.
func (e *Env) SetPool(p *sandbox.Pool) {
	d := e.deps()
	d.pool, d.injectedPool = p, true
}

// Client returns the weights version the LLM calls of step use (WeightsVersion, or e.Weights when set)
// and the client that calls it, built on first use and shared by every stage of the process (a replay
// client loads its recorded run once). Each role in roles is checked against its endpoint once, before
// its first use, so a bad endpoint fails before any work.
func (e *Env) Client(ctx context.Context, step int64, roles ...schemas.Role) (string, *llm.Client, error) {
	weights := e.Weights
	if weights == "" {
		var err error
		if weights, err = WeightsVersion(ctx, e.Lake, e.Run, e.Config, step); err != nil {
			return "", nil, err
		}
	}
	d := e.deps()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		return weights, d.client, nil
	}
	entry, ok := d.clients[weights]
	if !ok {
		c, err := llm.New(ctx, llm.SettingsFromConfig(e.Config, weights).WithEnvBaseURL(), llm.LakeReplayLoader(e.Lake))
		if err != nil {
			return "", nil, err
		}
		entry = &clientEntry{client: c}
		d.clients[weights] = entry
	}
	var unchecked []schemas.Role
	for _, r := range roles {
		if !slices.Contains(entry.checked, r) {
			unchecked = append(unchecked, r)
		}
	}
	if len(unchecked) > 0 {
		if err := entry.client.Check(ctx, unchecked...); err != nil {
			return "", nil, err
		}
		for _, r := range unchecked {
			// The server decides the request extras and the response layout (llm.server).
			e.Logger().Info("llm: role checked", "role", r, "server", entry.client.Server(r), "setting", e.Config.LLM.Server)
		}
		entry.checked = append(entry.checked, unchecked...)
	}
	return weights, entry.client, nil
}

// LLMLoad is what the process's LLM clients have in flight now (the calls of every client this Env
// made or was given, summed; the median latency of the busiest), for a progress note: a client is never
// made for it.
func (e *Env) LLMLoad() llm.Load {
	d := e.deps()
	d.mu.Lock()
	clients := make([]*llm.Client, 0, len(d.clients)+1)
	if d.client != nil {
		clients = append(clients, d.client)
	}
	for _, entry := range d.clients {
		clients = append(clients, entry.client)
	}
	d.mu.Unlock()
	var out llm.Load
	busiest := -1
	for _, c := range clients {
		l := c.Load()
		out.Calls += l.Calls
		if l.Calls > busiest || out.MedianLatency == 0 {
			busiest, out.MedianLatency = l.Calls, l.MedianLatency
		}
	}
	return out
}

// Pool returns the sandbox pool of the process, started on first use from the run's sandbox.* settings
// (SandboxOptions) and shared by the stages that run programs (gate, rollout).
func (e *Env) Pool(ctx context.Context) (*sandbox.Pool, error) {
	d := e.deps()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pool != nil {
		return d.pool, nil
	}
	opts := SandboxOptions(e.Config)
	opts.AllowUnsafe = opts.AllowUnsafe || e.UnsafeNoIsolation
	p, err := sandbox.NewPool(ctx, opts)
	if err != nil {
		return nil, err
	}
	if p.Isolation() == sandbox.IsolationNone {
		e.Logger().Warn("sandbox: RUNNING GENERATED CODE WITHOUT ISOLATION (unsafe_no_isolation): it can read your files and secrets")
	}
	e.Logger().Info("sandbox: started", "isolation", p.Isolation(), "python", p.Python().Executable)
	d.pool = p
	return p, nil
}

// Keep returns the value kept under name, made by make on the first call and kept for every later
// stage of the process (a trainer that stays loaded across steps); Close closes it. A make that fails
// keeps nothing.
func (e *Env) Keep(name string, make func() (io.Closer, error)) (io.Closer, error) {
	d := e.deps()
	d.mu.Lock()
	defer d.mu.Unlock()
	if v, ok := d.kept[name]; ok {
		return v, nil
	}
	v, err := make()
	if err != nil {
		return nil, err
	}
	if d.kept == nil {
		d.kept = map[string]io.Closer{}
	}
	d.kept[name] = v
	d.keptOrder = append(d.keptOrder, name)
	return v, nil
}

// Close releases what e started: what Keep made (newest first; a resident trainer writes its last
// checkpoint) and the sandbox pool (its workers end with it). Injected dependencies stay open; e stays
// usable and starts them again on next use. The first error is returned, after everything was closed.
func (e *Env) Close() error {
	d := e.deps()
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for i := len(d.keptOrder) - 1; i >= 0; i-- {
		errs = append(errs, d.kept[d.keptOrder[i]].Close())
	}
	d.kept, d.keptOrder = nil, nil
	if d.pool != nil && !d.injectedPool {
		errs = append(errs, d.pool.Close())
		d.pool = nil
	}
	return errors.Join(errs...)
}

// SandboxOptions maps a run's sandbox.* settings onto the pool options: the one mapping the gate,
// rollout and `spade env` use. Reset shares the load deadline (sandbox.load_timeout_seconds);
// sandbox.workers 0 lets the workers follow the step (sandbox.Options.FollowStep, FitPool).
func SandboxOptions(cfg *config.Config) sandbox.Options {
	s := cfg.Sandbox
	return sandbox.Options{
		Python:            s.Python,
		Workers:           s.Workers,
		FollowStep:        s.Workers == 0,
		LoadTimeout:       time.Duration(s.LoadTimeoutSeconds) * time.Second,
		ResetTimeout:      time.Duration(s.LoadTimeoutSeconds) * time.Second,
		StepTimeout:       time.Duration(s.StepTimeoutSeconds) * time.Second,
		AddressSpace:      int64(s.MemoryMB) << 20,
		WorkerMemoryLimit: workerMemoryLimit(s.WorkerMemoryMB),
		ObservationCap:    s.MaxObservationBytes,
		AllowUnsafe:       s.UnsafeNoIsolation,
		MaxTurns:          cfg.Rollout.MaxTurns,
		OwnMaxTurns:       cfg.Rollout.TurnBudget == config.TurnBudgetOwn,
		RepairFStrings:    s.RepairFStrings,
	}
}

// FitPool makes room in pool for programs loaded at once, each running instances env instances at
// once (sandbox.Pool.Fit), and returns the most workers alive now: with sandbox.workers 0, one per
// program, so every program of a step runs at once; else sandbox.workers, the programs then taking
// turns. Workers that do not fit in the machine's memory are a one-line error naming sandbox.workers.
func FitPool(pool *sandbox.Pool, programs, instances int) (int, error) {
	n, err := pool.Fit(programs, instances)
	var me *sandbox.MemoryError
	if errors.As(err, &me) {
		return n, fmt.Errorf("%w; set sandbox.workers to %d or fewer (the programs then take turns, one per worker)", err, max(me.Fits, 1))
	}
	return n, err
}

// WeightsVersion returns the name the newest trained weights before step were published under (the
// weights_version of the newest non-empty train_metrics row at a lower step), or "" for the base model.
// With grpo.publish = none the trainer only saves its weights, the server keeps serving the base model,
// and the answer is always "".
func WeightsVersion(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, step int64) (string, error) {
	if cfg.GRPO.Publish == "none" {
		return "", nil
	}
	steps, err := lk.Steps(ctx, run, schemas.TrainMetricsSpec.Name)
	if err != nil {
		return "", fmt.Errorf("weights version: %w", err)
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i] >= step {
			continue
		}
		rows, err := lake.ReadRows[schemas.TrainMetricsRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.TrainMetricsSpec.Name, Step: steps[i]})
		if err != nil {
			return "", fmt.Errorf("weights version: %w", err)
		}
		for j := len(rows) - 1; j >= 0; j-- {
			if rows[j].WeightsVersion != "" {
				return rows[j].WeightsVersion, nil
			}
		}
	}
	return "", nil
}

// workerMemoryLimit is sandbox.worker_memory_mb as sandbox.Options.WorkerMemoryLimit: 0 (no bound) is
// negative there.
func workerMemoryLimit(mb int) int64 {
	if mb == 0 {
		return -1
	}
	return int64(mb) << 20
}
