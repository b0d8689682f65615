package generate

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
	"text/template"

	"github.com/spade-rl/spade/internal/config"
	"github.com/spade-rl/spade/internal/lake"
	"github.com/spade-rl/spade/internal/llm"
	"github.com/spade-rl/spade/schemas"
)

// Options are the per-invocation settings of the stage.
type Options struct {
	// Force replaces a committed candidates partition.
	Force bool
	// WeightsVersion is the served name of the current trained weights ("" = llm.designer.model); see
	// llm.SettingsFromConfig.
	WeightsVersion string
	// Client, when set, is used instead of one built from the run config (the runner shares one).
	Client *llm.Client
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

// Result reports what Generate did.
type Result struct {
	// Skipped is true when the candidates partition was already committed.
	Skipped bool
	// Candidates is the number of slots written; Parsed of them hold code and a hint.
	Candidates int
	// Parsed counts candidates whose response parsed.
	Parsed int
}

// Generator makes Designer calls for one run; it serves both the stage and the gate's regenerations.
type Generator struct {
	lk     *lake.Lake
	run    string
	cfg    *config.Config
	client *llm.Client
	tmpl   *template.Template
	log    *slog.Logger

	mu       sync.Mutex // serializes partition merges of Regenerate
	samples  map[int64][]schemas.SampleRow
	memories map[int64][]schemas.MemoryRow
}

// NewGenerator reads the run config, loads the Designer template and builds (and checks) the client.
func NewGenerator(ctx context.Context, lk *lake.Lake, run string, opts Options) (*Generator, error) {
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		return nil, err
	}
	tmpl, err := LoadTemplate(cfg.Setting, cfg.LLM.PromptFile)
	if err != nil {
		return nil, err
	}
	client := opts.Client
	if client == nil {
		client, err = llm.NewFromConfig(ctx, cfg, lk, opts.WeightsVersion, llm.RoleDesigner)
		if err != nil {
			return nil, err
		}
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Generator{lk: lk, run: run, cfg: cfg, client: client, tmpl: tmpl, log: log,
		samples: map[int64][]schemas.SampleRow{}, memories: map[int64][]schemas.MemoryRow{}}, nil
}

// Run is the stage: it generates attempt 1 of every slot of refresh step `step`.
func Run(ctx context.Context, lk *lake.Lake, run string, step int64, opts Options) (Result, error) {
	key := lake.PartitionKey{Run: run, Table: schemas.CandidatesSpec.Name, Step: step}
	if done, err := lk.Committed(ctx, key); err != nil {
		return Result{}, err
	} else if done && !opts.Force {
		if opts.Log != nil {
			opts.Log.Info("generate: already committed", "run", run, "step", step)
		}
		return Result{Skipped: true}, nil
	}
	g, err := NewGenerator(ctx, lk, run, opts)
	if err != nil {
		return Result{}, err
	}
	return g.Generate(ctx, step, opts.Force)
}

// EnvID returns the id of a candidate: "env-" and 16 hex digits of SHA-256(seed, step, slot, attempt).
// It does not depend on the run's name, so a replayed run has the same ids.
func EnvID(seed, step int64, slot, attempt int32) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%d\x00%d\x00%d", seed, step, slot, attempt))
	return "env-" + hex.EncodeToString(sum[:8])
}

// callKey is the llm call key of a Designer call.
func callKey(slot, attempt int32) string { return fmt.Sprintf("slot=%d/attempt=%d", slot, attempt) }

// Generate writes attempt 1 of every slot of step: candidates and llm_calls. Slots are generated
// concurrently (bounded by llm.max_in_flight); a failed call or an unparsable answer is a candidate with
// its parse_error, never a stage failure.
func (g *Generator) Generate(ctx context.Context, step int64, force bool) (Result, error) {
	samples, err := g.slotSamples(ctx, step)
	if err != nil {
		return Result{}, err
	}
	memory, err := g.memory(ctx, step)
	if err != nil {
		return Result{}, err
	}
	rows := make([]schemas.CandidateRow, len(samples))
	errs := make([]error, len(samples))
	var wg sync.WaitGroup
	for i, s := range samples {
		wg.Go(func() { rows[i], errs[i] = g.attempt(ctx, s, memory, 1, nil) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if err := llm.CommitCalls(ctx, g.lk, g.run, step, g.client.TakeCalls()); err != nil {
		return Result{}, fmt.Errorf("generate: commit llm_calls: %w", err)
	}
	key := lake.PartitionKey{Run: g.run, Table: schemas.CandidatesSpec.Name, Step: step}
	if _, err := lake.WriteRows(ctx, g.lk, key, rows, lake.WriteOptions{Force: force}); err != nil {
		return Result{}, fmt.Errorf("generate: %w", err)
	}
	res := Result{Candidates: len(rows)}
	for _, r := range rows {
		if r.ParseError == "" {
			res.Parsed++
		}
	}
	g.log.Info("generate: committed", "run", g.run, "step", step, "candidates", res.Candidates, "parsed", res.Parsed)
	return res, nil
}

// Regenerate is the entry point the gate calls for a slot whose candidate failed: it asks the Designer
// again with the same slot (skill, document, memory), the failed code and the gate's error in the
// prompt, and commits the new attempt (prev.Attempt+1) to candidates and llm_calls at prev.Step before
// returning it. The returned row may itself carry a parse_error. It fails when prev.Attempt has reached
// gate.max_attempts, or on a lake, context or replay error. Safe for concurrent use.
func (g *Generator) Regenerate(ctx context.Context, prev schemas.CandidateRow, gateError string) (schemas.CandidateRow, error) {
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
	previous := &Previous{Attempt: int(prev.Attempt), Code: prev.Code, Error: gateError}
	row, err := g.attempt(ctx, samples[prev.Slot], memory, prev.Attempt+1, previous)
	if err != nil {
		return schemas.CandidateRow{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	calls := g.client.TakeCalls()
	if err := llm.CommitCalls(ctx, g.lk, g.run, prev.Step, calls); err != nil {
		return schemas.CandidateRow{}, fmt.Errorf("generate: commit llm_calls: %w", err)
	}
	key := lake.PartitionKey{Run: g.run, Table: schemas.CandidatesSpec.Name, Step: prev.Step}
	if err := llm.MergePartition(ctx, g.lk, key, []schemas.CandidateRow{row}, candidateID); err != nil {
		return schemas.CandidateRow{}, fmt.Errorf("generate: commit candidate: %w", err)
	}
	return row, nil
}

// candidateID orders candidates by slot then attempt.
func candidateID(r schemas.CandidateRow) string { return fmt.Sprintf("%06d/%03d", r.Slot, r.Attempt) }

// attempt renders the prompt of one slot, calls the Designer and parses the answer.
func (g *Generator) attempt(ctx context.Context, s schemas.SampleRow, memory []schemas.MemoryRow, attempt int32, previous *Previous) (schemas.CandidateRow, error) {
	data := NewPromptData(s.Setting, s.Skill)
	data.MaxTurns = g.cfg.Rollout.MaxTurns
	data.MaxAttempts = g.cfg.Gate.MaxAttempts
	data.Previous = previous
	if !g.cfg.Ablation.NoCorpus {
		data.Excerpt = s.Excerpt
	}
	if !g.cfg.Ablation.NoMemory {
		data.Memory = SelectMemory(memory, s.Skill, g.cfg.Memory.Seeds, g.cfg.Memory.Examples)
	}
	prompt, err := Render(g.tmpl, data)
	if err != nil {
		return schemas.CandidateRow{}, err
	}
	comp, err := g.client.Chat(ctx, llm.Request{
		Role: llm.RoleDesigner,
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
	parsed, err := ParseDesigner(comp.Text, comp.FinishReason)
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
		return nil, fmt.Errorf("generate: step %d has no samples (run `spade sample --step %d` first)", step, step)
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

// memory reads (once) the newest memory snapshot committed before step; none is an empty memory.
func (g *Generator) memory(ctx context.Context, step int64) ([]schemas.MemoryRow, error) {
	if g.cfg.Ablation.NoMemory {
		return nil, nil
	}
	g.mu.Lock()
	cached, ok := g.memories[step]
	g.mu.Unlock()
	if ok {
		return cached, nil
	}
	steps, err := g.lk.Steps(ctx, g.run, schemas.MemorySpec.Name)
	if err != nil {
		return nil, err
	}
	var rows []schemas.MemoryRow
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i] < step {
			rows, err = lake.ReadRows[schemas.MemoryRow](ctx, g.lk, lake.PartitionKey{Run: g.run, Table: schemas.MemorySpec.Name, Step: steps[i]})
			if err != nil {
				return nil, err
			}
			break
		}
	}
	g.mu.Lock()
	g.memories[step] = rows
	g.mu.Unlock()
	return rows, nil
}
