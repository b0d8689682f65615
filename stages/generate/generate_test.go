package generate_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spadekit/spade/stages/stage"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/generate"
)

const (
	designerModel = "frozen-designer"
	trainedModel  = "spade-lora-7"
	refreshStep   = 4
)

// designerScript answers every Designer prompt with envCode, except for skills that test failures.
func designerScript(req *llm.ChatRequestBody) llmtest.Reply {
	prompt := req.Messages[len(req.Messages)-1].Content
	switch {
	case strings.Contains(prompt, "previous attempt failed"):
		return llmtest.Reply{Text: "Fixed.\n```python\n" + envCode + "\n```\n<hint>fixed hint</hint>"}
	case strings.Contains(prompt, "causal inference"):
		return llmtest.Reply{Text: "```python\nclass Broken:\n    def reset(self, seed):\n", FinishReason: "length"}
	}
	return llmtest.Reply{Text: "```python\n" + envCode + "\n```\n<hint>bisect</hint>"}
}

type fixture struct {
	lk  *lake.Lake
	run string
	srv *llmtest.Server
	cfg *config.Config
}

func newFixture(t *testing.T, mutate func(*config.Config)) *fixture {
	t.Helper()
	srv := llmtest.Start(t, designerScript, designerModel, trainedModel)
	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sample.EnvsPerStep = 6
	beforeAuthorsKeys(cfg)
	cfg.LLM.Designer.BaseURL, cfg.LLM.Designer.Model = srv.URL, designerModel
	cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = srv.URL, designerModel
	if mutate != nil {
		mutate(cfg)
	}
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "g", cfg)
	skills := []string{schemas.SkillMath, schemas.SkillLogic, schemas.SkillCausal}
	var samples []schemas.SampleRow
	for slot := range 6 {
		samples = append(samples, schemas.SampleRow{Step: refreshStep, Slot: int32(slot), Skill: skills[slot%3], Setting: "games",
			DocID: fmt.Sprintf("doc-%d", slot), Excerpt: fmt.Sprintf("EXCERPT-%d: the Collatz map halves even numbers.", slot)})
	}
	laketest.Write(t, lk, lake.PartitionKey{Run: "g", Table: "samples", Step: refreshStep}, samples)
	memory := []schemas.MemoryRow{
		{Step: 3, Position: 0, PoolStep: 0, EnvID: "env-old-seed", Skill: schemas.SkillMath, Regret: 0.5, SolveRate: 0.5, Label: schemas.LabelSeed, Code: "class SeedEnv: MEMORY-SEED", Hint: "h"},
		{Step: 3, Position: 1, PoolStep: 0, EnvID: "env-old-easy", Skill: schemas.SkillMath, Regret: 0, SolveRate: 1, Label: schemas.LabelTooEasy, Code: "class EasyEnv: MEMORY-EASY", Hint: "h"},
		{Step: 3, Position: 2, PoolStep: 0, EnvID: "env-old-hard", Skill: schemas.SkillMath, Regret: 0, SolveRate: 0, Label: schemas.LabelTooHard, Code: "class HardEnv: MEMORY-HARD", Hint: "h"},
	}
	laketest.Write(t, lk, lake.PartitionKey{Run: "g", Table: "memory", Step: 3}, memory)
	return &fixture{lk: lk, run: "g", srv: srv, cfg: cfg}
}

func (f *fixture) candidates(t *testing.T) []schemas.CandidateRow {
	t.Helper()
	rows, err := lake.ReadStep[schemas.CandidateRow](context.Background(), f.lk, f.run, "candidates", refreshStep)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func (f *fixture) calls(t *testing.T) []schemas.LLMCallRow {
	t.Helper()
	rows, err := lake.ReadStep[schemas.LLMCallRow](context.Background(), f.lk, f.run, "llm_calls", refreshStep)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestGenerateWritesCandidatesAndCalls(t *testing.T) {
	f := newFixture(t, nil)
	res, err := stage.Within(context.Background(), f.env(t, trainedModel), stage.Generate, refreshStep, generate.Run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Candidates != 6 || res.Parsed != 4 {
		t.Fatalf("result %+v, want 6 candidates, 4 parsed (causal slots truncated)", res)
	}
	calls := f.calls(t)
	byCall := map[string]schemas.LLMCallRow{}
	for _, c := range calls {
		byCall[c.CallID] = c
	}
	for _, c := range f.candidates(t) {
		if c.Attempt != 1 || c.EnvID != generate.EnvID(f.cfg.Seed, refreshStep, c.Slot, 1) {
			t.Fatalf("candidate identity %+v", c)
		}
		call, ok := byCall[c.CallID]
		if !ok || call.Role != "designer" || call.ResponseText != c.RawResponse {
			t.Fatalf("candidate %d has no matching llm_calls row", c.Slot)
		}
		if c.Skill == schemas.SkillCausal {
			if !strings.Contains(c.ParseError, "truncated") || c.Code != "" {
				t.Fatalf("truncated response accepted: %+v", c)
			}
			continue
		}
		if c.ParseError != "" || c.Code != envCode || c.Hint != "bisect" {
			t.Fatalf("candidate %d: %+v", c.Slot, c)
		}
		if c.Skill == schemas.SkillMath && strings.Join(c.MemoryRefs, ",") != "env-old-seed,env-old-easy,env-old-hard" {
			t.Fatalf("memory refs %v", c.MemoryRefs)
		}
	}
	for _, req := range f.srv.Requests() {
		if req.Model != trainedModel {
			t.Fatalf("designer called %q, want the trained weights %q", req.Model, trainedModel)
		}
		if req.MaxTokens != f.cfg.LLM.Designer.MaxTokens {
			t.Fatalf("max_tokens %d", req.MaxTokens)
		}
	}
	out, err := stage.Execute(context.Background(), f.env(t, ""), generate.Stage{}, refreshStep)
	if err != nil || !out.Skipped {
		t.Fatalf("second run: %+v %v", out, err)
	}
}

// prompts runs generate under a config mutation and returns the Designer prompts of the math slots.
func prompts(t *testing.T, mutate func(*config.Config)) []string {
	t.Helper()
	f := newFixture(t, mutate)
	if _, err := stage.Within(context.Background(), f.env(t, trainedModel), stage.Generate, refreshStep, generate.Run); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range f.calls(t) {
		if strings.Contains(c.Request, "math reasoning") {
			out = append(out, c.Request)
		}
	}
	if len(out) != 2 {
		t.Fatalf("%d math prompts recorded", len(out))
	}
	return out
}

func TestAblationsChangeThePrompts(t *testing.T) {
	full := prompts(t, nil)
	for _, p := range full {
		for _, want := range []string{"## Source document", "EXCERPT-", "## Memory of past environments", "MEMORY-SEED", "MEMORY-EASY", "MEMORY-HARD", `"model":"` + trainedModel + `"`} {
			if !strings.Contains(p, want) {
				t.Fatalf("full prompt lacks %q", want)
			}
		}
	}
	for _, p := range prompts(t, func(c *config.Config) { c.Ablation.NoCorpus = true }) {
		if strings.Contains(p, "## Source document") || strings.Contains(p, "EXCERPT-") || !strings.Contains(p, "MEMORY-SEED") {
			t.Fatal("no_corpus prompt still shows the document, or lost the memory")
		}
	}
	for _, p := range prompts(t, func(c *config.Config) { c.Ablation.NoMemory = true }) {
		if strings.Contains(p, "## Memory") || strings.Contains(p, "MEMORY-") || !strings.Contains(p, "EXCERPT-") {
			t.Fatal("no_memory prompt still shows the memory, or lost the document")
		}
	}
	for _, p := range prompts(t, func(c *config.Config) { c.Ablation.FrozenDesigner = true }) {
		if !strings.Contains(p, `"model":"`+designerModel+`"`) {
			t.Fatal("frozen designer is not served by llm.designer.model")
		}
		if strings.Contains(p, "return_token_ids") || strings.Contains(p, "logprobs") {
			t.Fatal("frozen designer requests ask for token ids a hosted model would reject")
		}
	}
}

func TestRegenerateAppendsNextAttemptWithTheError(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.Gate.MaxAttempts = 3 })
	ctx := context.Background()
	if _, err := stage.Within(ctx, f.env(t, ""), stage.Generate, refreshStep, generate.Run); err != nil {
		t.Fatal(err)
	}
	env := f.env(t, "")
	g, err := generate.NewGenerator(ctx, env, refreshStep)
	if err != nil {
		t.Fatal(err)
	}
	// The regenerations go into a gate transaction, as the gate's do.
	tx := env.Lake.Begin(lake.TxnSpec{Run: env.Run, Stage: string(stage.Gate), Step: refreshStep})
	var failed schemas.CandidateRow
	for _, c := range f.candidates(t) {
		if c.Slot == 2 {
			failed = c
		}
	}
	row, err := g.Regenerate(ctx, tx, failed, "gate: reset(seed=0): NameError: name 'rng' is not defined")
	if err != nil {
		t.Fatal(err)
	}
	if row.Attempt != 2 || row.Code != envCode || row.Hint != "fixed hint" || row.Slot != 2 || row.DocID != failed.DocID {
		t.Fatalf("regenerated %+v", row)
	}
	last := f.srv.Requests()[len(f.srv.Requests())-1].Messages[1].Content
	if !strings.Contains(last, "NameError: name 'rng'") || !strings.Contains(last, "attempt 1 of 3") || !strings.Contains(last, "EXCERPT-2:") {
		t.Fatalf("regeneration prompt lacks the error, attempt or slot document:\n%s", last)
	}
	row3, err := g.Regenerate(ctx, tx, row, "gate: step: timeout")
	if err != nil || row3.Attempt != 3 {
		t.Fatalf("attempt 3: %+v %v", row3, err)
	}
	if _, err := g.Regenerate(ctx, tx, row3, "again"); err == nil || !strings.Contains(err.Error(), "max_attempts") {
		t.Fatalf("attempt 4 allowed: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cands := f.candidates(t)
	if len(cands) != 8 {
		t.Fatalf("%d candidates, want 6 + 2 regenerations", len(cands))
	}
	if calls := f.calls(t); len(calls) != 8 {
		t.Fatalf("%d llm_calls rows, want 8", len(calls))
	}
}

// Bad input: a Designer endpoint answering 500, and one with invalid UTF-8: recorded failures, the
// stage goes on. A wrong endpoint or unknown model: one clear error before any call.
func TestGenerateBadEndpoints(t *testing.T) {
	ctx := context.Background()
	var n atomic.Int64
	f := newFixture(t, func(c *config.Config) { c.LLM.MaxRetries = 1 })
	failing := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		if n.Add(1)%2 == 0 {
			return llmtest.Reply{Raw: []byte("{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}")}
		}
		return llmtest.Reply{Status: 500}
	}, designerModel)
	client, err := llm.New(ctx, llm.Settings{Roles: map[schemas.Role]llm.RoleSettings{schemas.RoleDesigner: {BaseURL: failing.URL, Model: designerModel, MaxTokens: 10}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := f.env(t, "")
	env.SetClient(client)
	res, err := stage.Within(ctx, env, stage.Generate, refreshStep, generate.Run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Candidates != 6 || res.Parsed != 0 {
		t.Fatalf("result %+v", res)
	}
	for _, c := range f.candidates(t) {
		if !strings.HasPrefix(c.ParseError, "llm: ") {
			t.Fatalf("parse error %q", c.ParseError)
		}
	}
	for _, c := range f.calls(t) {
		if c.Error == "" {
			t.Fatal("failed call recorded without its reason")
		}
	}
	f2 := newFixture(t, func(c *config.Config) { c.LLM.Designer.Model = "no-such-model" })
	before := f2.srv.Count()
	_, err = stage.Within(ctx, f2.env(t, ""), stage.Generate, refreshStep, generate.Run)
	if err == nil || !strings.Contains(err.Error(), `model "no-such-model" is not served`) || f2.srv.Count() != before {
		t.Fatalf("unknown model: %v (%d calls made)", err, f2.srv.Count()-before)
	}
	f3 := newFixture(t, func(c *config.Config) { c.LLM.Designer.BaseURL = "http://127.0.0.1:1/v1" })
	if _, err := stage.Within(ctx, f3.env(t, ""), stage.Generate, refreshStep, generate.Run); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("wrong endpoint: %v", err)
	}
}

// env returns the stage.Env of the fixture's run; weights, when set, names the weights to call.
func (f *fixture) env(t *testing.T, weights string) *stage.Env {
	t.Helper()
	env, err := stage.NewEnv(context.Background(), f.lk, f.run, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Weights = weights
	return env
}

// beforeAuthorsKeys sets the Designer-side keys to their values before the presets took the authors'
// (the inline hint, repair regenerations, today's memory selection, the unused-document draw, trained weights served as a LoRA
// adapter called by its version name): the tests of those mechanics use them; the authors' values are
// tested in separate_test.go and memory_test.go.
func beforeAuthorsKeys(cfg *config.Config) {
	cfg.GRPO.Publish, cfg.GRPO.LoRARank = config.PublishLoRA, 32
	cfg.Generate.HintMode, cfg.Generate.Regen = config.HintInline, config.RegenRepair
	cfg.Memory.Seeds, cfg.Memory.SeedPool, cfg.Memory.CodeChars = 4, 0, 0
	cfg.Memory.ShowHint, cfg.Memory.Negatives, cfg.Memory.NegativesCode = true, 0, true
	cfg.Sample.DocDraw = config.DocUniform // resampled attempts take unused documents (docdraw.go's rule)
}
