package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Regenerator asks the Designer for a new attempt at a slot whose last candidate failed the
// gate; *generate.Generator implements it, and the runner or the CLI hands it in. prev is the
// failed candidate and gateError the message to show the Designer. The returned candidate is
// attempt prev.Attempt+1 of the same slot with its own EnvID (it may carry a parse error);
// recording it (candidates, llm_calls) is the implementation's job, as fragments of the step (the
// gate reads the step's candidates with lake.ReadStep, so a re-run gate sees the regenerated ones). An error ends the slot's
// attempts; the gate stops asking at gate.max_attempts by itself too.
type Regenerator interface {
	Regenerate(ctx context.Context, tx *lake.Txn, prev schemas.CandidateRow, gateError string) (schemas.CandidateRow, error)
}

// Options are the gate's own settings of one invocation (the rest comes from the stage.Env).
type Options struct {
	// Regenerator asks the Designer again for failed slots; nil judges the lake's candidates only.
	Regenerator Regenerator
	// Hinter writes the hints of the accepted envs; required under generate.hint_mode = separate,
	// unused otherwise (the hint then comes with the candidate).
	Hinter Hinter
	// Screen is the tools setting's LLM screen. Nil builds one from the run's llm.screen.* settings
	// (its calls are committed to llm_calls): under the official checks with gate.tools_checks authors a
	// ValidatorScreen, always (an empty llm.screen model and base URL are the Agent's); otherwise an
	// LLMScreen when llm.screen.model or llm.screen.base_url is set, and else tools_screen is skipped.
	Screen Screen
	// NoStatic switches the static check off (for containment tests; never in a real run).
	NoStatic bool
	// Concurrency is how many candidates are checked at once (default: the pool's workers).
	Concurrency int
}

// Result reports what the stage did.
type Result struct {
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

// Stage is the gate stage as the stage contract runs it (stage.Execute).
type Stage struct {
	Options
	// NewRegenerator, when set and Options.Regenerator is nil, makes the Regenerator of the step (the
	// runner and the CLI pass generate's); nil judges the lake's candidates only.
	NewRegenerator func(ctx context.Context, env *stage.Env, step int64) (Regenerator, error)
	// NewHinter, when set and Options.Hinter is nil, makes the Hinter of the step under
	// generate.hint_mode = separate (the runner and the CLI pass generate's).
	NewHinter func(ctx context.Context, env *stage.Env, step int64) (Hinter, error)
}

// Name is "gate".
func (Stage) Name() stage.Name { return stage.Gate }

// Reads is the step's candidates.
func (Stage) Reads() []stage.Input {
	return []stage.Input{{Table: schemas.CandidatesSpec.Name, From: stage.Generate}}
}

// Writes is gate_results, then envs (the marker).
func (Stage) Writes() []string { return []string{schemas.GateResultsSpec.Name, schemas.EnvsSpec.Name} }

// Due is true at pool refresh steps.
func (Stage) Due(cfg *config.Config, step int64) bool { return stage.RefreshDue(cfg, step) }

// Run judges the step's candidates and returns the closing line.
func (s Stage) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	opts := s.Options
	if opts.Regenerator == nil && s.NewRegenerator != nil {
		regen, err := s.NewRegenerator(ctx, env, step)
		if err != nil {
			return "", fmt.Errorf("gate: the Designer regenerates failed slots and is not reachable: %w (pass --no-regenerate to judge only the candidates in the lake)", err)
		}
		opts.Regenerator = regen
	}
	if opts.Hinter == nil && s.NewHinter != nil && env.Config.Generate.HintMode == config.HintSeparate {
		hinter, err := s.NewHinter(ctx, env, step)
		if err != nil {
			return "", fmt.Errorf("gate: generate.hint_mode = separate asks the Designer's model for the hints and it is not reachable: %w", err)
		}
		opts.Hinter = hinter
	}
	res, err := Run(ctx, env, step, opts)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d of %d slots accepted, %d candidates checked (%d regenerated) in %.1fs",
		res.Accepted, res.Slots, res.Attempts, res.Regenerated, res.Elapsed.Seconds()), nil
}

// Run judges the candidates of pool step `step` (env's shard of the slots: slot mod shards = shard) in
// env's sandbox pool and commits gate_results and envs. Under generate.hint_mode = separate it then asks
// opts.Hinter for the hint of each accepted env (only those) and commits those calls, before the envs.
func Run(ctx context.Context, env *stage.Env, step int64, opts Options) (Result, error) {
	log, cfg, lk, run := env.Logger(), env.Config, env.Lake, env.Run
	separateHints := cfg.Generate.HintMode == config.HintSeparate
	if separateHints && opts.Hinter == nil {
		return Result{}, fmt.Errorf("gate: generate.hint_mode = separate needs the Designer's model to write the hints of accepted envs (no Hinter was given)")
	}
	shards, myShard := env.Shard.Shards(), env.Shard.Index
	resultsKey := lake.PartitionKey{Run: run, Table: schemas.GateResultsSpec.Name, Step: step}
	envsKey := lake.PartitionKey{Run: run, Table: schemas.EnvsSpec.Name, Step: step}
	// Generate's attempts and the regenerated ones (fragments of the step, see Regenerator).
	candidates, err := lake.ReadStep[schemas.CandidateRow](ctx, lk, run, schemas.CandidatesSpec.Name, step)
	if errors.Is(err, lake.ErrNotCommitted) {
		return Result{}, fmt.Errorf("gate: no candidates at step %d of run %s (run `%s` first)", step, run, stage.Command(env.Lake, run, "generate", "--step", strconv.FormatInt(step, 10)))
	}
	if err != nil {
		return Result{}, fmt.Errorf("gate: read candidates: %w", err)
	}
	pool, err := env.Pool(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("gate: %w", err)
	}

	slots := map[int32][]schemas.CandidateRow{}
	for _, c := range candidates {
		if int(c.Slot)%shards == myShard {
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
		// one program per worker: with sandbox.workers 0 every slot is judged at once
		if concurrency, err = stage.FitPool(pool, len(order), 1); err != nil {
			return Result{}, fmt.Errorf("gate: %w", err)
		}
	}
	screen := opts.Screen
	var screenClient *llm.Client
	authorsTools := cfg.Gate.ToolsChecks == config.ToolsChecksAuthors && cfg.Gate.Checks == config.GateOfficial
	if screen == nil && cfg.Setting == schemas.SettingTools && (cfg.LLM.Screen.Model != "" || cfg.LLM.Screen.BaseURL != "" || authorsTools) {
		screenClient, err = llm.NewFromConfig(ctx, cfg, lk, "", schemas.RoleScreen)
		if err != nil {
			return Result{}, fmt.Errorf("gate: screen model (llm.screen.*): %w", err)
		}
		screen = &LLMScreen{Client: screenClient, Step: step}
		if authorsTools {
			screen = &ValidatorScreen{Client: screenClient, Step: step}
		}
	}
	check := CheckOptions{Setting: cfg.Setting, ResetSeeds: cfg.Gate.ResetSeeds, RunSeed: cfg.Seed, NoStatic: opts.NoStatic, Screen: screen,
		Checks: cfg.Gate.Checks, Probes: cfg.Gate.Probes, Contract: cfg.Generate.Contract,
		LoadTimeout: time.Duration(cfg.Gate.LoadTimeoutSeconds) * time.Second, Shape: cfg.Gate.Shape, ToolsChecks: cfg.Gate.ToolsChecks}
	if cfg.Gate.Checks == config.GateStrict && cfg.Gate.MaxTurnDelaySeconds > 0 {
		maxDelay := time.Duration(cfg.Gate.MaxTurnDelaySeconds * float64(time.Second))
		if check.TurnDelays, err = AgentTurnDelays(ctx, lk, run, step, maxDelay); err != nil {
			return Result{}, fmt.Errorf("gate: the Agent's turn latencies for the probes' waits: %w", err)
		}
	}
	outcomes := make([]slotOutcome, len(order))
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, concurrency)
	prog := newGateProgress(env.Progress, len(order), env.LLMLoad)
	for i, slot := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = judgeSlot(ctx, env.Txn, pool, sem, slots[slot], cfg.Gate.MaxAttempts, check, opts.Regenerator, log, prog)
			if separateHints && outcomes[i].err == nil && outcomes[i].env != nil {
				// the accepted env's hint at once, while other slots are still judged or regenerated
				prog.hinting.Add(1)
				outcomes[i].hintCalls, outcomes[i].err = hintEnv(ctx, opts.Hinter, outcomes[i].env, log)
				prog.hinting.Add(-1)
			}
			prog.slotDone(outcomes[i].env != nil)
		}()
	}
	wg.Wait()
	prog.finish()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var errs []error
	for _, o := range outcomes {
		errs = append(errs, o.err)
	}
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if separateHints {
		// The hint calls are the "gate-hint" fragment of the step's llm_calls, one shard per gate process,
		// written in slot order, whatever order they ended in.
		var hintCalls []llm.Call
		for _, o := range outcomes {
			hintCalls = append(hintCalls, o.hintCalls...)
		}
		hopts := lake.WriteOptions{Shard: myShard, Shards: shards}
		if err := llm.WriteCalls(ctx, env.Txn, step, schemas.FragmentHint, hintCalls, hopts); err != nil {
			return Result{}, fmt.Errorf("gate: write hint calls: %w", err)
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
		// process.
		sopts := lake.WriteOptions{Shard: myShard, Shards: shards}
		if err := llm.WriteCalls(ctx, env.Txn, step, schemas.FragmentScreen, screenClient.TakeCalls(), sopts); err != nil {
			return res, fmt.Errorf("gate: write screen calls: %w", err)
		}
	}
	wopts := lake.WriteOptions{Shard: myShard, Shards: shards}
	if _, err := lake.WriteRows(ctx, env.Txn, resultsKey, results, wopts); err != nil {
		return res, fmt.Errorf("gate: write gate_results: %w", err)
	}
	if _, err := lake.WriteRows(ctx, env.Txn, envsKey, envs, wopts); err != nil {
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
	// hintCalls are the calls of the accepted env's hint (generate.hint_mode = separate).
	hintCalls []llm.Call
	err       error // the checks (or the hint call) could not run: nothing of the step is committed
}

// judgeSlot checks the slot's candidates in attempt order until one is accepted, then asks the
// Regenerator for more attempts up to maxAttempts. Each check holds a place of sem (one program per
// sandbox worker); a regeneration, which runs no program, holds none.
func judgeSlot(ctx context.Context, tx *lake.Txn, pool *sandbox.Pool, sem chan struct{}, list []schemas.CandidateRow, maxAttempts int, check CheckOptions, regen Regenerator, log *slog.Logger, prog *gateProgress) slotOutcome {
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
			prog.regenerating.Add(1)
			next, err := regen.Regenerate(ctx, tx, last, lastError)
			prog.regenerating.Add(-1)
			if err != nil {
				log.Warn("gate: regeneration failed", "slot", last.Slot, "attempt", last.Attempt+1, "err", err)
				return out
			}
			out.regenerated++
			cand = next
		}
		out.attempts++
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return out
		}
		prog.checking.Add(1)
		verdict := judge(ctx, pool, cand, check)
		prog.checking.Add(-1)
		<-sem
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
				Skill: cand.Skill, Setting: cand.Setting, ClassName: verdict.Class, Contract: verdict.Contract, Code: cand.Code, Hint: cand.Hint,
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
		names := CheckNamesWith(check.Setting, check.Checks, check.Contract, check.ToolsChecks)
		v := Verdict{Results: []CheckResult{{Check: CheckStatic, Error: "the Designer's response could not be parsed: " + cand.ParseError}}}
		for _, name := range names[1:] {
			v.Results = append(v.Results, CheckResult{Check: name, Skipped: true, Error: "skipped: an earlier check failed"})
		}
		return v
	}
	return Check(ctx, pool, cand.Code, check)
}
