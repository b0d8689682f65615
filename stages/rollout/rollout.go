package rollout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/spadekit/spade/internal/chattemplate"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Timing splits the stage's time. LLM and Sandbox are summed over concurrent episodes (busy time, so
// they can exceed Episodes); Episodes and Lake are wall time.
type Timing struct {
	// Episodes is the wall time of the episode phase.
	Episodes time.Duration
	// LLM is the summed time spent in Chat calls.
	LLM time.Duration
	// Sandbox is the summed time spent in sandbox calls (load, new, reset, tools, step).
	Sandbox time.Duration
	// Lake is the wall time of reading the pool and committing llm_calls, turns and episodes.
	Lake time.Duration
}

// Result reports what the stage did.
type Result struct {
	// PoolStep is the pool the envs came from.
	PoolStep int64
	// Envs, Episodes and Turns count what was played.
	Envs, Episodes, Turns int
	// EndedBy counts episodes by how they ended.
	EndedBy map[string]int
	// Dropped counts the envs of the shard not played because an earlier step of their pool timed out
	// (TimedOutEnvs).
	Dropped int
	// Retried counts the plays played again: after a sandbox worker failure (see envProgram), or under
	// rollout.play_retry failed after ending in env_error or agent_error.
	Retried int
	// Workers is the most programs loaded at once (stage.FitPool); PeakPlays the most plays in flight
	// at once.
	Workers, PeakPlays int
	// Tokens is the total of prompt and completion tokens.
	Tokens int64
	// Timing splits the time.
	Timing Timing
}

// HoldAfterTurnsEnv names a test hook: when set to a file path, the stage creates that file after
// committing turns and waits there, before committing episodes, until it is killed or its context ends
// (the crash-between-commits test kills it there).
const HoldAfterTurnsEnv = "SPADE_TEST_ROLLOUT_HOLD_AFTER_TURNS"

// holdForTest implements HoldAfterTurnsEnv.
func holdForTest(ctx context.Context) error {
	path := os.Getenv(HoldAfterTurnsEnv)
	if path == "" {
		return nil
	}
	if err := os.WriteFile(path, []byte("turns committed\n"), 0o644); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

// ErrNoPool is returned when no envs pool is committed at or before the step.
var ErrNoPool = errors.New("rollout: no envs pool")

// Stage is the rollout stage as the stage contract runs it (stage.Execute).
type Stage struct{}

// Name is "rollout".
func (Stage) Name() stage.Name { return stage.Rollout }

// Reads is the pool's envs (committed by the gate at the pool's refresh step).
func (Stage) Reads() []stage.Input {
	return []stage.Input{{Table: schemas.EnvsSpec.Name, From: stage.Gate, At: stage.PoolStart}}
}

// Writes is the "rollout" fragment of llm_calls, turns, then episodes (the marker).
func (Stage) Writes() []string {
	return []string{schemas.LLMCallsSpec.Name, schemas.TurnsSpec.Name, schemas.EpisodesSpec.Name}
}

// Due is true at every step.
func (Stage) Due(cfg *config.Config, step int64) bool { return stage.EveryStep(cfg, step) }

// Run plays the step and returns the closing line.
func (Stage) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	res, err := Run(ctx, env, step)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("pool %d, %d envs, %d episodes, %d turns, %d tokens; ended by %s",
		res.PoolStep, res.Envs, res.Episodes, res.Turns, res.Tokens, endedByText(res.EndedBy))
	if res.Dropped > 0 {
		line += fmt.Sprintf("; %d envs dropped after a timeout earlier in the pool", res.Dropped)
	}
	if res.Retried > 0 {
		line += fmt.Sprintf("; %d failed plays played again", res.Retried)
	}
	return line, nil
}

// endedByText writes the episode counts by ended_by as "done 13, max_turns 35": the ended_by values in
// schemas order (any other value after them, sorted), those with no episode left out ("none" when there
// is none at all).
func endedByText(counts map[string]int) string {
	var parts, others []string
	for _, e := range schemas.EndedByValues() {
		if n := counts[string(e)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", e, n))
		}
	}
	for e, n := range counts {
		if n > 0 && !schemas.EndedBy(e).Valid() {
			others = append(others, fmt.Sprintf("%s %d", e, n))
		}
	}
	sort.Strings(others)
	parts = append(parts, others...)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Run plays the step's episodes of env's shard of the pool's envs (split by internal/shard's hash of
// env_id) through env's sandbox pool and the Agent client of the step's weights, and writes llm_calls,
// turns and episodes into env.Txn, which Execute commits as one record.
func Run(ctx context.Context, env *stage.Env, step int64) (Result, error) {
	log, cfg, lk, run := env.Logger(), env.Config, env.Lake, env.Run
	shards, myShard := env.Shard.Shards(), env.Shard.Index
	epKey := lake.PartitionKey{Run: run, Table: schemas.EpisodesSpec.Name, Step: step}
	lakeStart := time.Now()
	poolStep, envs, err := readPool(ctx, lk, run, step)
	if err != nil {
		return Result{}, err
	}
	dropped, err := TimedOutEnvs(ctx, lk, run, poolStep, step)
	if err != nil {
		return Result{}, err
	}
	var mine []schemas.EnvRow
	droppedHere, playable := 0, 0
	for _, e := range envs {
		if !dropped[e.EnvID] {
			playable++
		}
		if shard.Of(e.EnvID, shards) != myShard {
			continue
		}
		if dropped[e.EnvID] {
			droppedHere++
			log.Info("rollout: env dropped for the rest of its pool (an earlier step timed out)", "env_id", e.EnvID, "pool_step", poolStep)
			continue
		}
		mine = append(mine, e)
	}
	lakeRead := time.Since(lakeStart)

	_, client, err := env.Client(ctx, step, schemas.RoleAgent)
	if err != nil {
		return Result{}, err
	}
	pool, err := env.Pool(ctx)
	if err != nil {
		return Result{}, err
	}
	tmpl, err := play.LoadRunAgentTemplate(cfg)
	if err != nil {
		return Result{}, err
	}
	chatTemplate, err := startChatTemplate(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	if chatTemplate != nil {
		defer chatTemplate.Close()
	}
	unhinted, hinted := Plays(cfg, step, playable)
	workers, err := stage.FitPool(pool, len(mine), unhinted+hinted)
	if err != nil {
		return Result{}, fmt.Errorf("rollout: %w", err)
	}
	r := &runner{workers: workers, cfg: cfg, step: step, client: client, pool: pool, tmpl: tmpl, log: log, unhinted: unhinted, hinted: hinted,
		discarded: map[string]bool{}}
	if chatTemplate != nil {
		r.chatTemplate = chatTemplate
	}
	r.progress = newProgress(env.Progress, len(mine)*(unhinted+hinted), client)
	start := time.Now()
	episodes, turns, err := r.playAll(ctx, mine)
	r.progress.finish()
	if err != nil {
		return Result{}, err
	}
	res := Result{PoolStep: poolStep, Envs: len(mine), Episodes: len(episodes), Turns: len(turns), EndedBy: map[string]int{},
		Dropped: droppedHere, Retried: int(r.retried.Load()), Workers: workers, PeakPlays: int(r.progress.peak.Load())}
	res.Timing.Episodes = time.Since(start)
	res.Timing.LLM = time.Duration(r.llmNanos.Load())
	res.Timing.Sandbox = time.Duration(r.sandboxNanos.Load())
	for _, e := range episodes {
		res.EndedBy[string(e.EndedBy)]++
		res.Tokens += e.Tokens
	}

	// The calls, turns and episodes go into the stage's transaction, committed together when Run returns.
	writeStart := time.Now()
	own := lake.WriteOptions{Shard: myShard, Shards: shards}
	calls := r.keepCalls(client.TakeCalls(), turns)
	if err := llm.WriteCalls(ctx, env.Txn, step, schemas.FragmentRollout, calls, own); err != nil {
		return Result{}, fmt.Errorf("rollout: write llm_calls: %w", err)
	}
	if _, err := lake.WriteRows(ctx, env.Txn, lake.PartitionKey{Run: run, Table: schemas.TurnsSpec.Name, Step: step}, turns, own); err != nil {
		return Result{}, fmt.Errorf("rollout: %w", err)
	}
	if err := holdForTest(ctx); err != nil {
		return Result{}, err
	}
	if _, err := lake.WriteRows(ctx, env.Txn, epKey, episodes, own); err != nil {
		return Result{}, fmt.Errorf("rollout: %w", err)
	}
	res.Timing.Lake = lakeRead + time.Since(writeStart)
	log.Info("rollout: committed", "run", run, "step", step, "pool_step", poolStep, "envs", res.Envs,
		"episodes", res.Episodes, "turns", res.Turns, "ended_by", res.EndedBy, "dropped", res.Dropped, "retried", res.Retried)
	return res, nil
}

// readPool returns the newest envs partition at or before step, sorted by env id.
func readPool(ctx context.Context, lk *lake.Lake, run string, step int64) (int64, []schemas.EnvRow, error) {
	steps, err := lk.Steps(ctx, run, schemas.EnvsSpec.Name)
	if err != nil {
		return 0, nil, err
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i] > step {
			continue
		}
		envs, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.EnvsSpec.Name, Step: steps[i]})
		if err != nil {
			return 0, nil, err
		}
		sort.Slice(envs, func(a, b int) bool { return envs[a].EnvID < envs[b].EnvID })
		return steps[i], envs, nil
	}
	return 0, nil, fmt.Errorf("%w at or before step %d of run %s (run `%s` for the pool's refresh step N first)", ErrNoPool, step, run, stage.Command(lk, run, "gate", "--step", "N"))
}

// runner plays the episodes of one step.
type runner struct {
	cfg    *config.Config
	step   int64
	client *llm.Client
	pool   *sandbox.Pool
	tmpl   *template.Template
	// chatTemplate renders the Agent model's chat template under rollout.token_io_delta template.
	chatTemplate play.Renderer
	log          *slog.Logger
	progress     *rolloutProgress
	// unhinted and hinted are the step's plays per env (Plays).
	unhinted, hinted int
	// workers is the most programs loaded at once (stage.FitPool).
	workers int

	llmNanos     atomic.Int64
	sandboxNanos atomic.Int64
	retried      atomic.Int64

	mu sync.Mutex
	// discarded holds the call ids of the turns of plays that were played again (a retry after a
	// sandbox worker failure); keepCalls leaves their calls out unless the retry made them again.
	discarded map[string]bool
}

// keepCalls returns the calls to commit: every call, except that a call made again under the same key
// by a retried play is kept once (the retry's, made last; TakeCalls keeps that order), and a call of a
// discarded attempt that the retry did not make again is left out, so every llm_calls row belongs to
// a committed turn. Without retries it returns calls as they are.
func (r *runner) keepCalls(calls []llm.Call, turns []schemas.TurnRow) []llm.Call {
	if len(r.discarded) == 0 {
		return calls
	}
	used := make(map[string]bool, len(turns))
	for _, t := range turns {
		used[t.CallID] = true
		// token_io tokens: the tokenize calls of the observations before and after the turn.
		used[llm.CallID(schemas.RoleAgent, r.step, ObservationKey(t.EpisodeID, int(t.Turn)))] = true
		used[llm.CallID(schemas.RoleAgent, r.step, ObservationKey(t.EpisodeID, int(t.Turn)+1))] = true
	}
	kept := calls[:0:0]
	for i, c := range calls {
		if i+1 < len(calls) && calls[i+1].CallID == c.CallID {
			continue
		}
		if r.discarded[c.CallID] && !used[c.CallID] {
			continue
		}
		kept = append(kept, c)
	}
	return kept
}

// episodeOut is one played episode.
type episodeOut struct {
	episode schemas.EpisodeRow
	turns   []schemas.TurnRow
	// sandboxErr is the sandbox failure that ended the episode, if any (envProgram.replace decides
	// whether it is retried).
	sandboxErr error
}

// playAll plays every env's groups concurrently and returns the rows in a deterministic order
// (episodes by episode id, turns by episode id then turn). Only a context or replay error stops it.
func (r *runner) playAll(ctx context.Context, envs []schemas.EnvRow) ([]schemas.EpisodeRow, []schemas.TurnRow, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	var outs []episodeOut
	var wg sync.WaitGroup
	// At most one program per sandbox worker at a time: a program holds its worker until it closes.
	// With sandbox.workers 0 the pool has a worker for every env (stage.FitPool), so every play of the
	// step is in flight at once; with a set sandbox.workers, handing each Load a worker that is free
	// (rather than queueing more Loads than workers inside the pool) keeps the envs flowing in waves.
	programs := make(chan struct{}, max(1, r.workers))
	for _, env := range envs {
		wg.Go(func() {
			select {
			case programs <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-programs }()
			got, err := r.playEnv(ctx, env)
			if err != nil {
				cancel(err)
				return
			}
			mu.Lock()
			outs = append(outs, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, nil, err
	}
	sort.Slice(outs, func(i, j int) bool { return outs[i].episode.EpisodeID < outs[j].episode.EpisodeID })
	episodes := make([]schemas.EpisodeRow, len(outs))
	var turns []schemas.TurnRow
	for i, o := range outs {
		episodes[i] = o.episode
		turns = append(turns, o.turns...)
	}
	return episodes, turns, nil
}

// playEnv loads one env's program and plays the step's unhinted and hinted episodes of it concurrently.
// A program that fails to load ends every episode with env_error (or timeout). A play whose sandbox
// worker died under it is played once more on a fresh worker (envProgram.replace), and under
// rollout.play_retry failed so is any other play that ended in env_error or agent_error (retriesFailed);
// a play is replayed at most once, its first attempt's turns are dropped and its calls are left out of
// llm_calls (keepCalls).
func (r *runner) playEnv(ctx context.Context, env schemas.EnvRow) ([]episodeOut, error) {
	progs := &envProgram{pool: r.pool, code: env.Code}
	t0 := time.Now()
	progs.load(ctx)
	r.sandboxNanos.Add(int64(time.Since(t0)))
	defer progs.close()
	if progs.err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		r.log.Warn("rollout: env does not load", "env_id", env.EnvID, "error", progs.err)
	}
	hintedPlays := r.hinted
	if strings.TrimSpace(env.Hint) == "" && r.cfg.Rollout.EmptyHint == config.EmptyHintSkip {
		hintedPlays = 0 // nothing to hint with: the env's regret is 0
	}
	n := r.unhinted + hintedPlays
	outs := make([]episodeOut, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		hinted, index := i >= r.unhinted, i
		if hinted {
			index = i - r.unhinted
		}
		wg.Go(func() {
			prog, loadErr := progs.current()
			outs[i], errs[i] = r.playEpisode(ctx, env, prog, loadErr, hinted, index)
			if errs[i] == nil && outs[i].sandboxErr != nil {
				t1 := time.Now()
				next, infra := progs.replace(ctx, prog, outs[i].sandboxErr)
				r.sandboxNanos.Add(int64(time.Since(t1)))
				if infra {
					r.log.Warn("rollout: playing again after a sandbox worker failure", "env_id", env.EnvID,
						"episode_id", outs[i].episode.EpisodeID, "error", outs[i].sandboxErr)
					r.retried.Add(1)
					r.discard(outs[i].turns)
					outs[i], errs[i] = r.playEpisode(ctx, env, next, nil, hinted, index)
					prog = nil // played twice already
				}
			}
			if errs[i] == nil && prog != nil && r.retriesFailed(outs[i].episode) {
				r.log.Warn("rollout: playing a failed play once more", "env_id", env.EnvID,
					"episode_id", outs[i].episode.EpisodeID, "ended_by", outs[i].episode.EndedBy, "error", outs[i].episode.Error)
				r.retried.Add(1)
				r.discard(outs[i].turns)
				if next, loadErr := progs.current(); next != nil {
					outs[i], errs[i] = r.playEpisode(ctx, env, next, loadErr, hinted, index)
				}
			}
			r.progress.episodeDone(len(outs[i].turns), outs[i].episode.Tokens)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return outs, nil
}

// retriesFailed reports whether a play that ended as e is played once more under rollout.play_retry
// failed: it ended in env_error or agent_error (a timeout is not replayed).
func (r *runner) retriesFailed(e schemas.EpisodeRow) bool {
	return r.cfg.Rollout.PlayRetry == config.RetryFailed &&
		(e.EndedBy == schemas.EndedEnvError || e.EndedBy == schemas.EndedAgentError)
}

// discard records the call ids of a play attempt that is played again.
func (r *runner) discard(turns []schemas.TurnRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range turns {
		r.discarded[t.CallID] = true
		r.discarded[llm.CallID(schemas.RoleAgent, r.step, ObservationKey(t.EpisodeID, int(t.Turn)+1))] = true
	}
}

// envProgram is one env's loaded program, shared by the env's plays of a step, and reloaded on a
// fresh worker when the sandbox worker under it dies. That is an infrastructure failure, which the
// authors retry once (orchestrator, play_games_async): a play is played again once when it failed
// with a crash or protocol error of the sandbox and the program can no longer start an instance (its
// worker is gone). Under rollout.play_retry worker_death an exception raised by the env, a timeout, a
// memory or output limit, and a failed model call are the env's or the model's own results and are never
// retried; under failed (retriesFailed) those that end a play in env_error or agent_error are.
type envProgram struct {
	pool *sandbox.Pool
	code string

	mu   sync.Mutex
	prog *sandbox.Program
	// err is the load error when prog is nil.
	err error
}

// load loads the program, once more when the first load failed for a reason outside the program (the
// pool could not start a worker, or handed out one that had died); a failure of the program itself (a
// *sandbox.Error of op load) is kept. The caller holds p.mu once the plays have started.
func (p *envProgram) load(ctx context.Context) {
	p.prog, p.err = p.pool.Load(ctx, p.code)
	var se *sandbox.Error
	if p.err != nil && ctx.Err() == nil && !(errors.As(p.err, &se) && se.Op == "load") {
		p.prog, p.err = p.pool.Load(ctx, p.code)
	}
}

// current returns the program in use, or its load error.
func (p *envProgram) current() (*sandbox.Program, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prog, p.err
}

// replace decides whether the failure cause of a play on failed is an infrastructure failure and, if
// so, returns the program to play again on: failed's replacement, loaded on a fresh worker by the
// first play that got here (failed is closed first, which frees its worker slot and ends the other
// plays still running on it, which then come here too). It returns false for any other failure.
func (p *envProgram) replace(ctx context.Context, failed *sandbox.Program, cause error) (*sandbox.Program, bool) {
	if failed == nil || ctx.Err() != nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prog != failed {
		return p.prog, p.prog != nil
	}
	if !errors.Is(cause, sandbox.ErrCrash) && !errors.Is(cause, sandbox.ErrProtocol) {
		return nil, false
	}
	probe, err := failed.NewEnv(ctx)
	if err == nil {
		probe.Close() // the worker is alive: the env's own process died
		return nil, false
	}
	if ctx.Err() != nil {
		return nil, false
	}
	failed.Close()
	// The same load as the first, with its second try: the worker the pool hands out may have died with
	// the failed one (a worker that was idle when the sandbox's processes were killed).
	p.load(ctx)
	return p.prog, p.prog != nil
}

// close closes the program in use (a replaced one was closed when it was replaced).
func (p *envProgram) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prog != nil {
		p.prog.Close()
	}
}

// playEpisode plays one episode (play.Play). The returned error is non-nil only for a context or
// replay error.
func (r *runner) playEpisode(ctx context.Context, env schemas.EnvRow, prog *sandbox.Program, loadErr error, hinted bool, index int) (episodeOut, error) {
	row := schemas.EpisodeRow{
		Step: r.step, PoolStep: env.PoolStep, EnvID: env.EnvID, Skill: env.Skill, EpisodeID: EpisodeID(r.step, env.EnvID, hinted, index),
		Hinted: hinted, Index: int32(index), Seed: EpisodeSeed(r.cfg.Seed, r.step, env.EnvID, index, hinted, r.cfg.Rollout.PairedSeeds),
	}
	r.progress.playStarted()
	defer r.progress.playEnded()
	res, err := play.Play(ctx, play.Episode{Cfg: r.cfg, Client: r.client, Tmpl: r.tmpl, Row: row, Hint: env.Hint,
		LLMNanos: &r.llmNanos, SandboxNanos: &r.sandboxNanos, Template: r.chatTemplate}, prog, loadErr)
	if err != nil {
		return episodeOut{}, err
	}
	return episodeOut{episode: res.Episode, turns: res.Turns, sandboxErr: res.SandboxErr}, nil
}

// startChatTemplate starts the renderer of the Agent model's chat template when rollout.token_io is
// tokens and rollout.token_io_delta template, or auto with the model's directory known
// (rollout.chat_template_dir, else grpo.model_path; the interpreter of sandbox.python, which needs
// jinja2); nil otherwise. The caller closes it.
func startChatTemplate(ctx context.Context, cfg *config.Config) (*chattemplate.Helper, error) {
	dir, delta := cfg.ChatTemplatePath(), cfg.Rollout.TokenIODelta
	if cfg.Rollout.TokenIO != config.TokenIOTokens || !(delta == config.DeltaTemplate || delta == config.DeltaAuto && dir != "") {
		return nil, nil // no renderer needed; auto without the model's files takes the server's rendering or the text
	}
	python := cfg.Sandbox.Python
	if python == "" {
		python = sandbox.DefaultPython()
	}
	h, err := chattemplate.Start(ctx, chattemplate.Options{Python: python, ModelDir: dir, RenderOnly: true})
	if err != nil {
		return nil, fmt.Errorf("rollout: rollout.token_io_delta template: %w", err)
	}
	return h, nil
}
