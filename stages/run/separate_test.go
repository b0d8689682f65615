package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/stage"
)

const hintSystem = "You write hints"

// generate.hint_mode = separate end to end, generate then the gate (with the runner's Regenerator and
// Hinter) against the scripted server: the Designer is asked for the program alone, the hint call is
// made only for accepted envs, reads their code, samples at generate.hint_temperature, is recorded with
// role hint in the gate-hint fragment, and its answer is the env's hint; a slot that keeps failing stops
// at gate.max_attempts and gets no hint call.
func TestSeparateHintModeEndToEnd(t *testing.T) { separateHintRun(t, false) }

// A hint call that fails after the client's retries keeps the env, with an empty hint, and records the
// failure in the gate-hint fragment.
func TestSeparateHintFailureKeepsTheEnv(t *testing.T) { separateHintRun(t, true) }

func separateHintRun(t *testing.T, failHints bool) {
	ctx := context.Background()
	const hintText = "Work out the lock's modulus from the first two probes. Answer with one integer."
	good, err := os.ReadFile(filepath.Join("..", "..", "testdata", "envs", "math_modular_lock.py"))
	if err != nil {
		t.Fatal(err)
	}
	const broken = "class Broken:\n    def reset(self, seed):\n        return undefined_name\n    def step(self, action):\n        return '', 0.0, True, {}\n"
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		prompt := req.Messages[len(req.Messages)-1].Content
		switch {
		case strings.Contains(req.Messages[0].Content, hintSystem) && failHints:
			return llmtest.Reply{Status: 500}
		case strings.Contains(req.Messages[0].Content, hintSystem):
			return llmtest.Reply{Text: hintText}
		case strings.Contains(prompt, "causal inference"):
			return llmtest.Reply{Text: "```python\n" + broken + "```\n"}
		}
		return llmtest.Reply{Text: "```python\n" + string(good) + "```\n"}
	}, "designer-model")

	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string]string{
		"generate.hint_mode": "separate", "gate.max_attempts": "2", "sample.envs_per_step": "3",
		"sample.skills": "math_reasoning,logical_deduction,causal_inference", "gate.checks": "strict", "generate.regen": "repair",
		"sandbox.python": "/usr/bin/python3", "llm.designer.base_url": srv.URL, "llm.designer.model": "designer-model",
		"llm.agent.base_url": srv.URL, "llm.agent.model": "designer-model", "llm.max_retries": "0",
	} {
		if err := cfg.Set(key, value); err != nil {
			t.Fatal(err)
		}
	}
	if p := os.Getenv("SPADE_PYTHON"); p != "" {
		cfg.Sandbox.Python = p
	}
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "sep", cfg)
	var samples []schemas.SampleRow
	for slot, skill := range []string{schemas.SkillMath, schemas.SkillLogic, schemas.SkillCausal} {
		samples = append(samples, schemas.SampleRow{Step: 0, Slot: int32(slot), Skill: skill, Setting: "games", DocID: "d", Excerpt: "A lock opens at a hidden residue."})
	}
	laketest.Write(t, lk, lake.PartitionKey{Run: "sep", Table: "samples", Step: 0}, samples)
	env := runEnv(t, lk, "sep")
	t.Cleanup(func() { env.Close() })
	var gateStage stage.Stage
	for _, s := range Stages() {
		if s.Name() == stage.Gate {
			gateStage = s
		}
	}
	if _, err := stage.Execute(ctx, env, generate.Stage{}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := stage.Execute(ctx, env, gateStage, 0); err != nil {
		t.Fatal(err)
	}

	envs, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: "sep", Table: "envs", Step: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 2 {
		t.Fatalf("%d envs accepted, want 2 (the causal slot keeps failing)", len(envs))
	}
	calls, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, "sep", "llm_calls", 0)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]schemas.Role{}
	for _, c := range calls {
		roles[c.CallID] = c.Role
	}
	for _, e := range envs {
		if want := map[bool]string{false: hintText, true: ""}[failHints]; e.Hint != want {
			t.Fatalf("env %s hint %q", e.EnvID, e.Hint)
		}
		if roles[e.CallID] != schemas.RoleDesigner {
			t.Fatalf("env %s's generating call is a %q call, want the Designer's (grpo trains on it)", e.EnvID, roles[e.CallID])
		}
	}
	hintRows, err := lake.ReadRows[schemas.LLMCallRow](ctx, lk, lake.PartitionKey{Run: "sep", Table: "llm_calls", Step: 0, Fragment: schemas.FragmentHint})
	if err != nil {
		t.Fatal(err)
	}
	// One hint call per accepted env (2), or generate.hint_attempts of them when every one fails.
	wantRows := 2
	if failHints {
		wantRows = 2 * cfg.Generate.HintAttempts
	}
	if len(hintRows) != wantRows {
		t.Fatalf("%d rows in the gate-hint fragment, want %d (accepted envs only)", len(hintRows), wantRows)
	}
	for _, r := range hintRows {
		if r.Role != schemas.RoleHint || !strings.Contains(r.Request, `"temperature":0.3`) || !strings.Contains(r.Request, "class ModularLock") {
			t.Fatalf("hint call row: role %q request %.300s", r.Role, r.Request)
		}
		if (r.Error != "") != failHints {
			t.Fatalf("hint call row error %q (failing hints: %v)", r.Error, failHints)
		}
	}
	var hintRequests, designerRequests int
	for _, req := range srv.Requests() {
		prompt := req.Messages[len(req.Messages)-1].Content
		if strings.Contains(req.Messages[0].Content, hintSystem) {
			hintRequests++
			if !strings.Contains(prompt, "class ModularLock") {
				t.Fatal("hint prompt does not carry the accepted program")
			}
			if req.Temperature == nil || *req.Temperature != 0.3 || req.MaxTokens != 4096 || req.Model != "designer-model" {
				t.Fatalf("hint request: temperature %v, max_tokens %d, model %q", req.Temperature, req.MaxTokens, req.Model)
			}
			continue
		}
		designerRequests++
		if strings.Contains(prompt, "<hint>") || strings.Contains(strings.ToLower(prompt), "privileged hint") {
			t.Fatal("the Designer is asked for a hint in separate mode")
		}
		if req.Temperature == nil || *req.Temperature != cfg.LLM.Designer.Temperature {
			t.Fatal("Designer call not sampled at llm.designer.temperature")
		}
	}
	// 3 first attempts + 1 regeneration of the causal slot (gate.max_attempts = 2 counts the first)
	if hintRequests != wantRows || designerRequests != 4 {
		t.Fatalf("%d hint and %d Designer requests, want %d and 4", hintRequests, designerRequests, wantRows)
	}
	cands, err := lake.ReadStep[schemas.CandidateRow](ctx, lk, "sep", "candidates", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		if c.Hint != "" {
			t.Fatalf("candidate %s carries a hint in separate mode", c.EnvID)
		}
	}
}
