package rollout

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// PromptVersion names the embedded Agent templates (prompts/agent_<setting>.v1.tmpl).
const PromptVersion = "v1"

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
	return fmt.Sprintf("pool %d, %d envs, %d episodes, %d turns, %d tokens; ended by %v",
		res.PoolStep, res.Envs, res.Episodes, res.Turns, res.Tokens, res.EndedBy), nil
}

// Run plays the step's episodes of env's shard of the pool's envs (split by internal/shard's hash of
// env_id) through env's sandbox pool and the Agent client of the step's weights, and commits llm_calls,
// turns and episodes. Without env.Force, turns and this shard's llm_calls fragment are still replaced:
// Execute runs the stage only while episodes is not committed, so they are a killed attempt's leftovers.
func Run(ctx context.Context, env *stage.Env, step int64) (Result, error) {
	log, cfg, lk, run := env.Logger(), env.Config, env.Lake, env.Run
	shards, myShard := env.Shard.Shards(), env.Shard.Index
	epKey := lake.PartitionKey{Run: run, Table: schemas.EpisodesSpec.Name, Step: step}
	lakeStart := time.Now()
	poolStep, envs, err := readPool(ctx, lk, run, step)
	if err != nil {
		return Result{}, err
	}
	var mine []schemas.EnvRow
	for _, e := range envs {
		if shard.Of(e.EnvID, shards) == myShard {
			mine = append(mine, e)
		}
	}
	lakeRead := time.Since(lakeStart)

	_, client, err := env.Client(ctx, step, llm.RoleAgent)
	if err != nil {
		return Result{}, err
	}
	pool, err := env.Pool(ctx)
	if err != nil {
		return Result{}, err
	}
	tmpl, err := agentTemplate(cfg.Setting)
	if err != nil {
		return Result{}, err
	}
	r := &runner{cfg: cfg, step: step, client: client, pool: pool, tmpl: tmpl, log: log}
	r.progress = newProgress(env.Progress, len(mine)*2*cfg.Rollout.GroupSize)
	start := time.Now()
	episodes, turns, err := r.playAll(ctx, mine)
	r.progress.finish()
	if err != nil {
		return Result{}, err
	}
	res := Result{PoolStep: poolStep, Envs: len(mine), Episodes: len(episodes), Turns: len(turns), EndedBy: map[string]int{}}
	res.Timing.Episodes = time.Since(start)
	res.Timing.LLM = time.Duration(r.llmNanos.Load())
	res.Timing.Sandbox = time.Duration(r.sandboxNanos.Load())
	for _, e := range episodes {
		res.EndedBy[e.EndedBy]++
		res.Tokens += e.Tokens
	}

	// The episodes partition marks the stage done and is committed last. The calls and turns before it
	// replace what an earlier, killed attempt of this shard committed (ReplaceShard: the whole partition
	// unsharded, this shard's parts of it sharded), so a re-run never leaves a killed attempt's rows
	// beside the new episodes.
	writeStart := time.Now()
	own := lake.WriteOptions{Shard: myShard, Shards: shards, ReplaceShard: true}
	if err := llm.CommitCalls(ctx, lk, run, step, schemas.FragmentRollout, client.TakeCalls(), own); err != nil {
		return Result{}, fmt.Errorf("rollout: commit llm_calls: %w", err)
	}
	if _, err := lake.WriteRows(ctx, lk, lake.PartitionKey{Run: run, Table: schemas.TurnsSpec.Name, Step: step}, turns, own); err != nil {
		return Result{}, fmt.Errorf("rollout: %w", err)
	}
	if err := holdForTest(ctx); err != nil {
		return Result{}, err
	}
	epOpts := lake.WriteOptions{Shard: myShard, Shards: shards, ReplaceShard: env.Force}
	if _, err := lake.WriteRows(ctx, lk, epKey, episodes, epOpts); err != nil {
		return Result{}, fmt.Errorf("rollout: %w", err)
	}
	res.Timing.Lake = lakeRead + time.Since(writeStart)
	log.Info("rollout: committed", "run", run, "step", step, "pool_step", poolStep, "envs", res.Envs,
		"episodes", res.Episodes, "turns", res.Turns, "ended_by", res.EndedBy)
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
	return 0, nil, fmt.Errorf("%w at or before step %d of run %s (run `spade gate --step N` for the pool's refresh step first)", ErrNoPool, step, run)
}

// agentTemplate loads the embedded Agent system prompt of a setting.
func agentTemplate(setting string) (*template.Template, error) {
	name := fmt.Sprintf("agent_%s.%s.tmpl", setting, PromptVersion)
	text, err := promptFS.ReadFile("prompts/" + name)
	if err != nil {
		return nil, fmt.Errorf("rollout: agent prompt for setting %q: %w", setting, err)
	}
	return template.New(name).Option("missingkey=error").Parse(string(text))
}

// SystemPrompt renders the Agent's system prompt; the hint is included only for hinted episodes.
func SystemPrompt(tmpl *template.Template, maxTurns int, hint string) (string, error) {
	var buf bytes.Buffer
	err := tmpl.Execute(&buf, struct {
		MaxTurns int
		Hint     string
	}{maxTurns, hint})
	return string(bytes.TrimSpace(buf.Bytes())), err
}

// runner plays the episodes of one step.
type runner struct {
	cfg      *config.Config
	step     int64
	client   *llm.Client
	pool     *sandbox.Pool
	tmpl     *template.Template
	log      *slog.Logger
	progress *rolloutProgress

	llmNanos     atomic.Int64
	sandboxNanos atomic.Int64
}

// episodeOut is one played episode.
type episodeOut struct {
	episode schemas.EpisodeRow
	turns   []schemas.TurnRow
}

// playAll plays every env's groups concurrently and returns the rows in a deterministic order
// (episodes by episode id, turns by episode id then turn). Only a context or replay error stops it.
func (r *runner) playAll(ctx context.Context, envs []schemas.EnvRow) ([]schemas.EpisodeRow, []schemas.TurnRow, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	var outs []episodeOut
	var wg sync.WaitGroup
	// At most one program per sandbox worker at a time: a program holds its worker until it closes, and
	// handing each Load a worker that is free (rather than queueing more Loads than workers inside the
	// pool) keeps the envs flowing in waves of sandbox.workers.
	programs := make(chan struct{}, max(1, r.pool.Options().Workers))
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

// playEnv loads one env's program and plays its 2·G episodes concurrently. A program that fails to
// load ends every episode with env_error (or timeout).
func (r *runner) playEnv(ctx context.Context, env schemas.EnvRow) ([]episodeOut, error) {
	g := r.cfg.Rollout.GroupSize
	t0 := time.Now()
	prog, loadErr := r.pool.Load(ctx, env.Code)
	r.sandboxNanos.Add(int64(time.Since(t0)))
	if loadErr == nil {
		defer prog.Close()
	} else {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		r.log.Warn("rollout: env does not load", "env_id", env.EnvID, "error", loadErr)
	}
	outs := make([]episodeOut, 2*g)
	errs := make([]error, 2*g)
	var wg sync.WaitGroup
	for i := range 2 * g {
		hinted, index := i >= g, i%g
		wg.Go(func() {
			outs[i], errs[i] = r.playEpisode(ctx, env, prog, loadErr, hinted, index)
			r.progress.episodeDone(len(outs[i].turns), outs[i].episode.Tokens)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return outs, nil
}

// endedBy classifies a sandbox error: a missed deadline is a timeout, anything else an env error.
func endedBy(err error) string {
	if errors.Is(err, sandbox.ErrTimeout) {
		return schemas.EndedTimeout
	}
	return schemas.EndedEnvError
}

// playEpisode plays one episode. The returned error is non-nil only for a context or replay error.
func (r *runner) playEpisode(ctx context.Context, env schemas.EnvRow, prog *sandbox.Program, loadErr error, hinted bool, index int) (episodeOut, error) {
	id := EpisodeID(r.step, env.EnvID, hinted, index)
	ep := schemas.EpisodeRow{
		Step: r.step, PoolStep: env.PoolStep, EnvID: env.EnvID, Skill: env.Skill, EpisodeID: id, Hinted: hinted,
		Index: int32(index), Seed: EpisodeSeed(r.cfg.Seed, r.step, env.EnvID, index, hinted, r.cfg.Rollout.PairedSeeds),
	}
	out := episodeOut{}
	var instance *sandbox.Env
	fail := func(err error) (episodeOut, error) {
		if ctx.Err() != nil {
			return episodeOut{}, context.Cause(ctx)
		}
		ep.EndedBy, ep.Error = endedBy(err), err.Error()
		if instance != nil {
			ep.EnvCPUSeconds = instance.CPUSeconds()
		}
		out.episode = ep
		return out, nil
	}
	if loadErr != nil {
		return fail(loadErr)
	}
	t0 := time.Now()
	instance, err := prog.NewEnv(ctx)
	if err != nil {
		r.sandboxNanos.Add(int64(time.Since(t0)))
		return fail(err)
	}
	defer instance.Close()
	obs, err := instance.Reset(ctx, ep.Seed)
	if err != nil {
		r.sandboxNanos.Add(int64(time.Since(t0)))
		return fail(fmt.Errorf("reset(seed=%d): %w", ep.Seed, err))
	}
	var tools []json.RawMessage
	var known map[string]bool
	if r.cfg.Setting == schemas.SettingTools {
		raw, err := instance.Tools(ctx)
		if err == nil {
			err = json.Unmarshal(raw, &tools)
		}
		if err != nil {
			r.sandboxNanos.Add(int64(time.Since(t0)))
			return fail(fmt.Errorf("tools(): %w", err))
		}
		known = toolNames(tools)
	}
	r.sandboxNanos.Add(int64(time.Since(t0)))

	hint := ""
	if hinted {
		hint = env.Hint
	}
	system, err := SystemPrompt(r.tmpl, r.cfg.Rollout.MaxTurns, hint)
	if err != nil {
		return episodeOut{}, err
	}
	messages := []llm.Message{{Role: "system", Content: system}, {Role: "user", Content: obs}}
	budget := r.cfg.Rollout.ContextTokens - r.cfg.LLM.Agent.MaxTokens
	ep.EndedBy = schemas.EndedMaxTurns
	for turn := 0; turn < r.cfg.Rollout.MaxTurns; turn++ {
		t1 := time.Now()
		comp, err := r.client.Chat(ctx, llm.Request{
			Role: llm.RoleAgent, Step: r.step, Key: fmt.Sprintf("%s/turn=%d", id, turn),
			Messages: CutHistory(messages, budget), Tools: tools,
		})
		r.llmNanos.Add(int64(time.Since(t1)))
		if err != nil {
			return episodeOut{}, fmt.Errorf("rollout: env %s episode %s turn %d: %w", env.EnvID, id, turn, err)
		}
		ep.Tokens += comp.PromptTokens + comp.CompletionTokens
		row := schemas.TurnRow{Step: r.step, EpisodeID: id, EnvID: env.EnvID, Turn: int32(turn), Observation: obs, Info: "{}", CallID: comp.CallID}
		if comp.Failed() {
			row.ParseError = "llm: " + comp.Err
			out.turns = append(out.turns, row)
			ep.EndedBy, ep.Error = schemas.EndedAgentError, comp.Err
			break
		}
		var action string
		if r.cfg.Setting == schemas.SettingTools {
			action, err = ParseToolAction(comp.ToolCalls, known)
		} else {
			action, err = ParseGameAction(comp.Text)
		}
		if err != nil {
			row.ParseError = err.Error()
			out.turns = append(out.turns, row)
			feedback := ParseFeedback(r.cfg.Setting, err)
			messages = appendExchange(messages, comp, feedback)
			obs = feedback
			continue
		}
		row.Action = action
		t2 := time.Now()
		res, err := instance.Step(ctx, action)
		r.sandboxNanos.Add(int64(time.Since(t2)))
		if err != nil {
			if ctx.Err() != nil {
				return episodeOut{}, context.Cause(ctx)
			}
			row.Done = true
			out.turns = append(out.turns, row)
			ep.EndedBy, ep.Error = endedBy(err), fmt.Sprintf("step(turn=%d): %v", turn, err)
			break
		}
		row.Reward, row.Done = res.Reward, res.Done
		if len(res.Info) > 0 {
			row.Info = string(res.Info)
		}
		out.turns = append(out.turns, row)
		ep.Return += res.Reward
		if res.Done {
			ep.EndedBy, ep.Success = schemas.EndedDone, res.Success()
			break
		}
		messages = appendExchange(messages, comp, res.Observation)
		obs = res.Observation
	}
	ep.Turns = int32(len(out.turns))
	ep.EnvCPUSeconds = instance.CPUSeconds()
	out.episode = ep
	return out, nil
}

// appendExchange adds the Agent's answer and the next observation to the conversation: for a tool call,
// the assistant's first call and a tool message answering it; otherwise an assistant and a user message.
func appendExchange(messages []llm.Message, comp *llm.Completion, observation string) []llm.Message {
	if len(comp.ToolCalls) > 0 {
		call := comp.ToolCalls[0]
		if call.ID == "" {
			call.ID = "call_0"
		}
		if call.Type == "" {
			call.Type = "function"
		}
		return append(messages,
			llm.Message{Role: "assistant", Content: comp.Text, ToolCalls: []llm.ToolCall{call}},
			llm.Message{Role: "tool", Content: observation, ToolCallID: call.ID})
	}
	return append(messages, llm.Message{Role: "assistant", Content: comp.Text}, llm.Message{Role: "user", Content: observation})
}
