package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// Regenerator asks the Designer for a new attempt at a slot whose last candidate failed the
// gate; *generate.Generator implements it, and the runner or the CLI hands it in. prev is the
// failed candidate and gateError the message to show the Designer. The returned candidate is
// attempt prev.Attempt+1 of the same slot with its own EnvID (it may carry a parse error);
// recording it (candidates, llm_calls) is the implementation's job, as fragments of the step (the
// gate reads the step's candidates with lake.ReadStep, so a re-run gate sees the regenerated ones). An error ends the slot's
// attempts; the gate stops asking at gate.max_attempts by itself too.
type Regenerator interface {
	Regenerate(ctx context.Context, prev schemas.CandidateRow, gateError string) (schemas.CandidateRow, error)
}

// FragmentScreen is the llm_calls fragment of a step that holds the gate's screen calls.
const FragmentScreen = "gate-screen"

// Options are the per-invocation settings of the stage (the rest comes from run.json).
type Options struct {
	// Shard and Shards split the slots (slot mod Shards == Shard); Shards 0 means 1.
	Shard, Shards int
	// Force replaces committed gate_results and envs partitions.
	Force bool
	// Pool runs the programs; nil makes one from the run's sandbox.* settings (closed on return).
	Pool *sandbox.Pool
	// Regenerator asks the Designer again for failed slots; nil judges the lake's candidates only.
	Regenerator Regenerator
	// Screen is the tools setting's LLM screen. Nil builds an LLMScreen from the run's llm.screen.*
	// settings when llm.screen.model or llm.screen.base_url is set (its calls are committed to
	// llm_calls), and otherwise records tools_screen as skipped.
	Screen Screen
	// UnsafeNoIsolation lets the pool run generated code without isolation when no layer works
	// (the CLI's --unsafe-no-isolation; sandbox.unsafe_no_isolation in the run config).
	UnsafeNoIsolation bool
	// NoStatic switches the static check off (for containment tests; never in a real run).
	NoStatic bool
	// Concurrency is how many candidates are checked at once (default: the pool's workers).
	Concurrency int
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

// Result reports what the stage did.
type Result struct {
	// Skipped is true when both partitions were committed and Force was not set.
	Skipped bool
	// Slots is the number of slots judged (this shard).
	Slots int
	// Accepted is the number of slots with an accepted env.
	Accepted int
	// Attempts is the number of candidates checked, regenerated ones included.
	Attempts int
	// Regenerated is the number of candidates obtained from the Regenerator.
	Regenerated int
	// Elapsed is the wall time of the checks.
	Elapsed time.Duration
}

// PoolOptions maps a run's sandbox settings to pool options.
func PoolOptions(cfg *config.Config) sandbox.Options {
	s := cfg.Sandbox
	return sandbox.Options{
		Python:         s.Python,
		Workers:        s.Workers,
		LoadTimeout:    time.Duration(s.LoadTimeoutSeconds) * time.Second,
		ResetTimeout:   time.Duration(s.LoadTimeoutSeconds) * time.Second,
		StepTimeout:    time.Duration(s.StepTimeoutSeconds) * time.Second,
		AddressSpace:   int64(s.MemoryMB) << 20,
		ObservationCap: s.MaxObservationBytes,
		AllowUnsafe:    s.UnsafeNoIsolation,
	}
}

// Run judges the candidates of pool step `step` of `run` and commits gate_results and envs.
func Run(ctx context.Context, lk *lake.Lake, run string, step int64, opts Options) (Result, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Shards <= 0 {
		opts.Shards = 1
	}
	if opts.Shard < 0 || opts.Shard >= opts.Shards {
		return Result{}, fmt.Errorf("gate: shard %d out of range [0, %d)", opts.Shard, opts.Shards)
	}
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		return Result{}, err
	}
	resultsKey := lake.PartitionKey{Run: run, Table: schemas.GateResultsSpec.Name, Step: step}
	envsKey := lake.PartitionKey{Run: run, Table: schemas.EnvsSpec.Name, Step: step}
	if !opts.Force {
		a, err := lk.Committed(ctx, resultsKey)
		if err != nil {
			return Result{}, err
		}
		b, err := lk.Committed(ctx, envsKey)
		if err != nil {
			return Result{}, err
		}
		if a && b {
			log.Info("gate: already committed", "run", run, "step", step)
			return Result{Skipped: true}, nil
		}
	}
	// Generate's attempts and the regenerated ones (fragments of the step, see Regenerator).
	candidates, err := lake.ReadStep[schemas.CandidateRow](ctx, lk, run, schemas.CandidatesSpec.Name, step)
	if errors.Is(err, lake.ErrNotCommitted) {
		return Result{}, fmt.Errorf("gate: no candidates at step %d of run %s (run `spade generate --step %d` first)", step, run, step)
	}
	if err != nil {
		return Result{}, fmt.Errorf("gate: read candidates: %w", err)
	}
	pool := opts.Pool
	if pool == nil {
		popts := PoolOptions(cfg)
		popts.AllowUnsafe = popts.AllowUnsafe || opts.UnsafeNoIsolation
		pool, err = sandbox.NewPool(ctx, popts)
		if err != nil {
			return Result{}, fmt.Errorf("gate: %w", err)
		}
		defer pool.Close()
	}
	if pool.Isolation() == sandbox.IsolationNone {
		log.Warn("gate: RUNNING GENERATED CODE WITHOUT ISOLATION (unsafe_no_isolation): it can read your files and secrets")
	}
	log.Info("gate: sandbox", "isolation", pool.Isolation(), "python", pool.Python().Executable)

	slots := map[int32][]schemas.CandidateRow{}
	for _, c := range candidates {
		if int(c.Slot)%opts.Shards == opts.Shard {
			slots[c.Slot] = append(slots[c.Slot], c)
		}
	}
	order := make([]int32, 0, len(slots))
	for slot, list := range slots {
		sort.Slice(list, func(i, j int) bool { return list[i].Attempt < list[j].Attempt })
		order = append(order, slot)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })

	concurrency := opts.Concurrency
	if concurrency <= 0 {
		concurrency = pool.Options().Workers
	}
	screen := opts.Screen
	var screenClient *llm.Client
	if screen == nil && cfg.Setting == schemas.SettingTools && (cfg.LLM.Screen.Model != "" || cfg.LLM.Screen.BaseURL != "") {
		screenClient, err = llm.NewFromConfig(ctx, cfg, lk, "", llm.RoleScreen)
		if err != nil {
			return Result{}, fmt.Errorf("gate: screen model (llm.screen.*): %w", err)
		}
		screen = &LLMScreen{Client: screenClient, Step: step}
	}
	check := CheckOptions{Setting: cfg.Setting, ResetSeeds: cfg.Gate.ResetSeeds, RunSeed: cfg.Seed, NoStatic: opts.NoStatic, Screen: screen}
	outcomes := make([]slotOutcome, len(order))
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, concurrency)
	for i, slot := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			outcomes[i] = judgeSlot(ctx, pool, slots[slot], cfg.Gate.MaxAttempts, check, opts.Regenerator, log)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	for _, o := range outcomes {
		if o.err != nil {
			return Result{}, o.err
		}
	}
	res := Result{Slots: len(order), Elapsed: time.Since(start)}
	var results []schemas.GateResultRow
	var envs []schemas.EnvRow
	for _, o := range outcomes {
		results = append(results, o.rows...)
		res.Attempts += o.attempts
		res.Regenerated += o.regenerated
		if o.env != nil {
			envs = append(envs, *o.env)
			res.Accepted++
		}
	}
	if screenClient != nil {
		// The screen's calls are the "gate-screen" fragment of the step's llm_calls, one shard per gate
		// process; a re-run shard replaces its own.
		sopts := lake.WriteOptions{Shard: opts.Shard, Shards: opts.Shards, ReplaceShard: true}
		if err := llm.CommitCalls(ctx, lk, run, step, FragmentScreen, screenClient.TakeCalls(), sopts); err != nil {
			return res, fmt.Errorf("gate: commit screen calls: %w", err)
		}
	}
	wopts := lake.WriteOptions{Shard: opts.Shard, Shards: opts.Shards, Force: opts.Force}
	if _, err := lake.WriteRows(ctx, lk, resultsKey, results, wopts); err != nil && !(errors.Is(err, lake.ErrCommitted) && !opts.Force) {
		return res, fmt.Errorf("gate: write gate_results: %w", err)
	}
	if _, err := lake.WriteRows(ctx, lk, envsKey, envs, wopts); err != nil && !(errors.Is(err, lake.ErrCommitted) && !opts.Force) {
		return res, fmt.Errorf("gate: write envs: %w", err)
	}
	log.Info("gate: committed", "run", run, "step", step, "slots", res.Slots, "accepted", res.Accepted,
		"attempts", res.Attempts, "regenerated", res.Regenerated, "seconds", res.Elapsed.Seconds())
	return res, nil
}

// slotOutcome is what judging one slot produced.
type slotOutcome struct {
	rows        []schemas.GateResultRow
	env         *schemas.EnvRow
	attempts    int
	regenerated int
	err         error // the checks could not run: nothing of the step is committed
}

// judgeSlot checks the slot's candidates in attempt order until one is accepted, then asks the
// Regenerator for more attempts up to maxAttempts.
func judgeSlot(ctx context.Context, pool *sandbox.Pool, list []schemas.CandidateRow, maxAttempts int, check CheckOptions, regen Regenerator, log *slog.Logger) slotOutcome {
	var out slotOutcome
	queue := append([]schemas.CandidateRow{}, list...)
	var last schemas.CandidateRow
	var lastError string
	for len(queue) > 0 || (regen != nil && last.EnvID != "" && int(last.Attempt) < maxAttempts) {
		if ctx.Err() != nil {
			return out
		}
		var cand schemas.CandidateRow
		if len(queue) > 0 {
			cand, queue = queue[0], queue[1:]
		} else {
			next, err := regen.Regenerate(ctx, last, lastError)
			if err != nil {
				log.Warn("gate: regeneration failed", "slot", last.Slot, "attempt", last.Attempt+1, "err", err)
				return out
			}
			out.regenerated++
			cand = next
		}
		out.attempts++
		verdict := judge(ctx, pool, cand, check)
		if verdict.Err != nil {
			out.err = fmt.Errorf("slot %d, env %s: %w", cand.Slot, cand.EnvID, verdict.Err)
			return out
		}
		for _, r := range verdict.Results {
			out.rows = append(out.rows, schemas.GateResultRow{
				Step: cand.Step, Slot: cand.Slot, EnvID: cand.EnvID, Attempt: cand.Attempt, Check: r.Check,
				Passed: r.Passed, Skipped: r.Skipped, Error: r.Error, DurationMS: float64(r.Duration.Microseconds()) / 1000,
			})
		}
		if verdict.Accepted {
			sum := sha256.Sum256([]byte(cand.Code))
			out.env = &schemas.EnvRow{
				Step: cand.Step, PoolStep: cand.Step, Slot: cand.Slot, EnvID: cand.EnvID, Attempt: cand.Attempt,
				Skill: cand.Skill, Setting: cand.Setting, ClassName: verdict.Class, Code: cand.Code, Hint: cand.Hint,
				CodeSHA256: hex.EncodeToString(sum[:]), DocID: cand.DocID, CallID: cand.CallID, MemoryRefs: []string{},
			}
			log.Info("gate: accepted", "slot", cand.Slot, "env", cand.EnvID, "attempt", cand.Attempt)
			return out
		}
		last, lastError = cand, verdict.FailureText()
		log.Info("gate: rejected", "slot", cand.Slot, "env", cand.EnvID, "attempt", cand.Attempt, "reason", lastError)
	}
	return out
}

// judge checks one candidate; a candidate whose response did not parse fails the static check.
func judge(ctx context.Context, pool *sandbox.Pool, cand schemas.CandidateRow, check CheckOptions) Verdict {
	check.Hint, check.Step, check.EnvID = cand.Hint, cand.Step, cand.EnvID
	if cand.Setting != "" {
		check.Setting = cand.Setting
	}
	if cand.Code == "" {
		names := GamesChecks
		if check.Setting == schemas.SettingTools {
			names = ToolsChecks
		}
		v := Verdict{Results: []CheckResult{{Check: CheckStatic, Error: "the Designer's response could not be parsed: " + cand.ParseError}}}
		for _, name := range names[1:] {
			v.Results = append(v.Results, CheckResult{Check: name, Skipped: true, Error: "skipped: an earlier check failed"})
		}
		return v
	}
	return Check(ctx, pool, cand.Code, check)
}
