package generate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Result reports what Generate did.
type Result struct {
	// Candidates is the number of slots written (by this shard); Parsed of them hold code (and a hint
	// under generate.hint_mode = inline).
	Candidates int
	// Parsed counts candidates whose response parsed.
	Parsed int
}

// Generator makes Designer calls for one run; it serves the stage, the gate's regenerations
// (Regenerate) and, under generate.hint_mode = separate, the gate's hint calls (Hint).
type Generator struct {
	lk       *lake.Lake
	run      string
	cfg      *config.Config
	client   *llm.Client
	spec     PromptSpec
	tmpl     *template.Template
	hintTmpl *template.Template // nil unless generate.hint_mode = separate
	log      *slog.Logger

	shard, shards int // the slots Generate writes (slot mod shards == shard)

	mu       sync.Mutex // guards the caches
	samples  map[int64][]schemas.SampleRow
	memories map[int64]memorySnapshot
	draws    map[int64]*docDraw
}

// NewGenerator loads the Designer template of env's run (PromptSpec: the setting, generate.hint_mode and
// ablation.no_corpus pick it) and the client that calls the weights of step (env.Client, checked before
// any call: the designer role, and the hint role under generate.hint_mode = separate). It writes the
// slots of env's shard.
func NewGenerator(ctx context.Context, env *stage.Env, step int64) (*Generator, error) {
	cfg := env.Config
	spec := SpecOf(cfg)
	tmpl, err := LoadTemplate(spec, cfg.LLM.PromptFile)
	if err != nil {
		return nil, err
	}
	roles := []schemas.Role{schemas.RoleDesigner}
	var hintTmpl *template.Template
	if !spec.AsksHint() {
		if hintTmpl, err = LoadHintTemplate(cfg.Generate.HintPromptFile); err != nil {
			return nil, err
		}
		roles = append(roles, schemas.RoleHint)
	}
	_, client, err := env.Client(ctx, step, roles...)
	if err != nil {
		return nil, err
	}
	return &Generator{lk: env.Lake, run: env.Run, cfg: cfg, client: client, spec: spec, tmpl: tmpl, hintTmpl: hintTmpl,
		log: env.Logger(), shard: env.Shard.Index, shards: env.Shard.Shards(),
		samples: map[int64][]schemas.SampleRow{}, memories: map[int64]memorySnapshot{}, draws: map[int64]*docDraw{}}, nil
}

// Stage is the generate stage as the stage contract runs it (stage.Execute).
type Stage struct{}

// Name is "generate".
func (Stage) Name() stage.Name { return stage.Generate }

// Reads is the step's samples.
func (Stage) Reads() []stage.Input {
	return []stage.Input{{Table: schemas.SamplesSpec.Name, From: stage.Sample}}
}

// Writes is the "generate" fragment of llm_calls, then candidates (the marker).
func (Stage) Writes() []string {
	return []string{schemas.LLMCallsSpec.Name, schemas.CandidatesSpec.Name}
}

// Due is true at pool refresh steps.
func (Stage) Due(cfg *config.Config, step int64) bool { return stage.RefreshDue(cfg, step) }

// Run generates the step's first attempts and returns the closing line.
func (Stage) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	res, err := Run(ctx, env, step)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d candidates, %d parsed", res.Candidates, res.Parsed), nil
}

// Run is the stage's work: it generates attempt 1 of every slot of env's shard at refresh step `step`
// (slot mod shards = shard, the gate's split: a slot's env_id changes with each attempt); the candidates
// partition and the "generate" llm_calls fragment commit when all shards are in. With env.Force it
// replaces a committed candidates partition and drops the gate's regenerated attempts of the step.
func Run(ctx context.Context, env *stage.Env, step int64) (Result, error) {
	g, err := NewGenerator(ctx, env, step)
	if err != nil {
		return Result{}, err
	}
	return g.Generate(ctx, env.Txn, step, env.Force)
}

// EnvID returns the id of a candidate: "env-" and 16 hex digits of SHA-256(seed, step, slot, attempt).
// It does not depend on the run's name, so a replayed run has the same ids.
func EnvID(seed, step int64, slot, attempt int32) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%d\x00%d\x00%d", seed, step, slot, attempt))
	return "env-" + hex.EncodeToString(sum[:8])
}

// callKey is the llm call key of a Designer call.
func callKey(slot, attempt int32) string { return fmt.Sprintf("slot=%d/attempt=%d", slot, attempt) }

// Generate writes attempt 1 of every slot of step (of this generator's shard, when the stage runs
// sharded) into tx: candidates and the "generate" llm_calls fragment. Slots are generated concurrently
// (bounded by llm.max_in_flight); a failed call or an unparsable answer is a candidate with its
// parse_error, never a stage failure. With force, the gate's regenerated attempts of the step (candidates
// and calls fragments) are dropped: they were regenerated from the replaced attempts.
func (g *Generator) Generate(ctx context.Context, tx *lake.Txn, step int64, force bool) (Result, error) {
	shards := max(g.shards, 1)
	samples, err := g.slotSamples(ctx, step)
	if err != nil {
		return Result{}, err
	}
	var mine []schemas.SampleRow
	for _, s := range samples {
		if int(s.Slot)%shards == g.shard {
			mine = append(mine, s)
		}
	}
	memory, err := g.memory(ctx, step)
	if err != nil {
		return Result{}, err
	}
	rows := make([]schemas.CandidateRow, len(mine))
	errs := make([]error, len(mine))
	var wg sync.WaitGroup
	for i, s := range mine {
		wg.Go(func() { rows[i], errs[i] = g.attempt(ctx, s, memory, 1, nil) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if force {
		if err := g.dropRegenerations(ctx, step); err != nil {
			return Result{}, fmt.Errorf("generate: %w", err)
		}
	}
	wopts := lake.WriteOptions{Shard: g.shard, Shards: shards}
	if err := llm.WriteCalls(ctx, tx, step, schemas.FragmentGenerate, g.client.TakeCalls(), wopts); err != nil {
		return Result{}, fmt.Errorf("generate: write llm_calls: %w", err)
	}
	key := lake.PartitionKey{Run: g.run, Table: schemas.CandidatesSpec.Name, Step: step}
	if _, err := lake.WriteRows(ctx, tx, key, rows, wopts); err != nil {
		return Result{}, fmt.Errorf("generate: %w", err)
	}
	res := Result{Candidates: len(rows)}
	for _, r := range rows {
		if r.ParseError == "" {
			res.Parsed++
		}
	}
	g.log.Info("generate: committed", "run", g.run, "step", step, "shard", g.shard, "shards", shards, "candidates", res.Candidates, "parsed", res.Parsed)
	return res, nil
}

// dropRegenerations drops the regeneration fragments of a step's candidates and llm_calls.
func (g *Generator) dropRegenerations(ctx context.Context, step int64) error {
	for _, table := range []string{schemas.CandidatesSpec.Name, schemas.LLMCallsSpec.Name} {
		parts, err := g.lk.StepPartitions(ctx, g.run, table, step)
		if err != nil {
			return err
		}
		for _, p := range parts {
			if strings.HasPrefix(p.Key.Fragment, schemas.FragmentRegeneratePrefix) {
				if err := g.lk.Drop(ctx, p.Key); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Regenerate is the entry point the gate calls for a slot whose candidate failed: it asks the Designer
// for attempt prev.Attempt+1 of the slot and writes it to candidates and llm_calls at prev.Step in tx
// (the gate's transaction, which lies at that step) before returning it. How it asks is generate.regen:
//   - repair: the same slot (skill, document, memory) with the failed code and the gate's error in the
//     prompt;
//   - resample (the authors'): the slot's prompt again as a fresh sample, with no error feedback and a
//     fresh corpus document (see resampleDoc); the new attempt number changes the call key and so the
//     sampling seed.
//
// The returned row may itself carry a parse_error. It fails when prev.Attempt has reached
// gate.max_attempts (which counts every attempt, the first included), or on a lake, context or replay
// error. Safe for concurrent use.
func (g *Generator) Regenerate(ctx context.Context, tx *lake.Txn, prev schemas.CandidateRow, gateError string) (schemas.CandidateRow, error) {
	if int(prev.Attempt) >= g.cfg.Gate.MaxAttempts {
		return schemas.CandidateRow{}, fmt.Errorf("generate: slot %d of step %d: attempt %d is the last (gate.max_attempts = %d)", prev.Slot, prev.Step, prev.Attempt, g.cfg.Gate.MaxAttempts)
	}
	samples, err := g.slotSamples(ctx, prev.Step)
	if err != nil {
		return schemas.CandidateRow{}, err
	}
	if int(prev.Slot) >= len(samples) || prev.Slot < 0 {
		return schemas.CandidateRow{}, fmt.Errorf("generate: step %d has no slot %d", prev.Step, prev.Slot)
	}
	memory, err := g.memory(ctx, prev.Step)
	if err != nil {
		return schemas.CandidateRow{}, err
	}
	slot, next := samples[prev.Slot], prev.Attempt+1
	var previous *Previous
	switch g.cfg.Generate.Regen {
	case config.RegenResample:
		if slot.DocID, slot.Excerpt, err = g.resampleDoc(ctx, prev.Step, prev.Slot, next); err != nil {
			return schemas.CandidateRow{}, err
		}
	default:
		previous = &Previous{Attempt: int(prev.Attempt), Code: prev.Code, Error: gateError}
	}
	row, err := g.attempt(ctx, slot, memory, next, previous)
	if err != nil {
		return schemas.CandidateRow{}, err
	}
	own := g.takeCall(row.CallID)
	fragment := schemas.RegenerateFragment(prev.Slot, prev.Attempt+1)
	if err := llm.WriteCalls(ctx, tx, prev.Step, fragment, own, lake.WriteOptions{}); err != nil {
		return schemas.CandidateRow{}, fmt.Errorf("generate: write llm_calls: %w", err)
	}
	key := lake.PartitionKey{Run: g.run, Table: schemas.CandidatesSpec.Name, Step: prev.Step, Fragment: fragment}
	if _, err := lake.WriteRows(ctx, tx, key, []schemas.CandidateRow{row}, lake.WriteOptions{}); err != nil {
		return schemas.CandidateRow{}, fmt.Errorf("generate: write candidate: %w", err)
	}
	return row, nil
}

// takeCall returns the recorded call with the given id. The client is shared (by the slots regenerating
// concurrently, the hint calls, and any other Generator of the process), so it takes only its own call.
func (g *Generator) takeCall(callID string) []llm.Call {
	c, ok := g.client.TakeCall(callID)
	if !ok {
		return nil
	}
	return []llm.Call{c}
}

// attempt renders the prompt of one slot, calls the Designer and parses the answer.
func (g *Generator) attempt(ctx context.Context, s schemas.SampleRow, memory memorySnapshot, attempt int32, previous *Previous) (schemas.CandidateRow, error) {
	data := NewPromptData(string(s.Setting), s.Skill)
	data.SetMaxTurns(g.cfg.Rollout.MaxTurns)
	data.Gymnasium = g.cfg.Generate.Contract == schemas.ContractGymnasium
	data.MaxAttempts = g.cfg.Gate.MaxAttempts
	if g.cfg.Rollout.ActionFormat != "" {
		data.ActionFormat = string(g.cfg.Rollout.ActionFormat)
	}
	if s.Setting == schemas.SettingTools {
		data.ToolSkill, data.Domain, data.TaskType = ToolsRotation(g.cfg.Seed, s.Step, s.Slot, attempt)
		if skill, ok := ToolSkillOf(s.Skill); ok {
			data.ToolSkill = skill // the slot's own tool skill (sample.skills lists the tool skills)
		}
	}
	data.Previous = previous
	if !g.cfg.Ablation.NoCorpus {
		data.Excerpt = s.Excerpt
	}
	if !g.cfg.Ablation.NoMemory {
		opts := MemoryOptionsFrom(g.cfg, s.Step, s.Slot)
		opts.Names = memory.names
		data.Memory = ChooseMemory(memory.rows, s.Skill, opts)
	}
	prompt, err := Render(g.tmpl, data)
	if err != nil {
		return schemas.CandidateRow{}, err
	}
	comp, err := g.client.Chat(ctx, llm.Request{
		Role: schemas.RoleDesigner,
		Step: s.Step,
		Key:  callKey(s.Slot, attempt),
		Messages: []llm.Message{
			{Role: "system", Content: "You are the Environment Designer of SPADE."},
			{Role: "user", Content: prompt},
		},
	})
	if err != nil {
		return schemas.CandidateRow{}, fmt.Errorf("generate: slot %d attempt %d: %w", s.Slot, attempt, err)
	}
	row := schemas.CandidateRow{
		Step: s.Step, Slot: s.Slot, EnvID: EnvID(g.cfg.Seed, s.Step, s.Slot, attempt), Attempt: attempt,
		Skill: s.Skill, Setting: s.Setting, DocID: s.DocID, RawResponse: comp.Text, CallID: comp.CallID,
		MemoryRefs: data.Memory.Refs(),
	}
	if previous != nil {
		row.PreviousError = previous.Error
	}
	if comp.Failed() {
		row.ParseError = "llm: " + comp.Err
		return row, nil
	}
	parse := ParseDesigner
	if !g.spec.AsksHint() {
		parse = ParseProgram
	}
	parsed, err := parse(comp.Text, comp.FinishReason)
	if err != nil {
		row.ParseError = err.Error()
		return row, nil
	}
	row.Code, row.Hint = parsed.Code, parsed.Hint
	return row, nil
}

// slotSamples reads (once) the samples of a refresh step, ordered by slot.
func (g *Generator) slotSamples(ctx context.Context, step int64) ([]schemas.SampleRow, error) {
	g.mu.Lock()
	cached, ok := g.samples[step]
	g.mu.Unlock()
	if ok {
		return cached, nil
	}
	rows, err := lake.ReadRows[schemas.SampleRow](ctx, g.lk, lake.PartitionKey{Run: g.run, Table: schemas.SamplesSpec.Name, Step: step})
	if errors.Is(err, lake.ErrNotCommitted) {
		return nil, fmt.Errorf("generate: step %d has no samples (run `%s` first)", step, stage.Command(g.lk, g.run, "sample", "--step", strconv.FormatInt(step, 10)))
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Slot < rows[j].Slot })
	for i, r := range rows {
		if int(r.Slot) != i {
			return nil, fmt.Errorf("generate: samples of step %d: slot %d missing", step, i)
		}
	}
	g.mu.Lock()
	g.samples[step] = rows
	g.mu.Unlock()
	return rows, nil
}

// memorySnapshot is the memory a step's Designer prompts show from, and under memory.negative_name
// file_stem the names its negatives are shown by (FileStem, by env id).
type memorySnapshot struct {
	rows  []schemas.MemoryRow
	names map[string]string
}

// memory reads (once) the newest memory snapshot committed before step; none is an empty memory. Under
// memory.negative_name file_stem it also reads the envs of the pools the snapshot remembers, for each
// entry's slot.
func (g *Generator) memory(ctx context.Context, step int64) (memorySnapshot, error) {
	var snap memorySnapshot
	if g.cfg.Ablation.NoMemory {
		return snap, nil
	}
	g.mu.Lock()
	cached, ok := g.memories[step]
	g.mu.Unlock()
	if ok {
		return cached, nil
	}
	steps, err := g.lk.Steps(ctx, g.run, schemas.MemorySpec.Name)
	if err != nil {
		return snap, err
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i] < step {
			snap.rows, err = lake.ReadRows[schemas.MemoryRow](ctx, g.lk, lake.PartitionKey{Run: g.run, Table: schemas.MemorySpec.Name, Step: steps[i]})
			if err != nil {
				return snap, err
			}
			break
		}
	}
	if g.cfg.Memory.NegativeName == config.NegativeByFileStem && len(snap.rows) > 0 {
		if snap.names, err = g.fileStems(ctx, snap.rows); err != nil {
			return snap, err
		}
	}
	g.mu.Lock()
	g.memories[step] = snap
	g.mu.Unlock()
	return snap, nil
}

// fileStems returns FileStem of every remembered env, read from the envs of the pools it came from; an
// env whose pool's envs are not in the lake is left out (it is shown by its class name).
func (g *Generator) fileStems(ctx context.Context, rows []schemas.MemoryRow) (map[string]string, error) {
	wanted := map[int64]bool{}
	for _, m := range rows {
		wanted[m.PoolStep] = true
	}
	names := map[string]string{}
	for pool := range wanted {
		envs, err := lake.ReadRows[schemas.EnvRow](ctx, g.lk, lake.PartitionKey{Run: g.run, Table: schemas.EnvsSpec.Name, Step: pool})
		if errors.Is(err, lake.ErrNotCommitted) {
			continue // a memory written without its envs (an imported one): those entries keep their class name
		}
		if err != nil {
			return nil, fmt.Errorf("generate: the envs of pool %d, which memory remembers: %w", pool, err)
		}
		for _, e := range envs {
			names[e.EnvID] = FileStem(e.PoolStep, e.Slot, e.Skill)
		}
	}
	return names, nil
}
