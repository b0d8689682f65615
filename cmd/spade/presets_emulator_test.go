package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/chattemplate/chattemplatetest"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// presetScript is one model for both roles of a preset's run on the emulator: the Designer answers
// with a sample program of the setting and its hint (after a think block when the request asks to
// think), the Agent with a boxed move or, given tools, a <tool_call> of the first tool (after a think
// block when asked, so the hybrid template has something to strip).
func presetScript(t *testing.T, setting schemas.Setting) llmtest.Script {
	t.Helper()
	// The games programs are in the authors' form, which the games presets' gate asks for (gate.shape).
	names := []string{"envs-authors/play/logic_mastermind", "envs-authors/play/math_arithmetic_chain",
		"envs-authors/play/causal_switchboard", "envs-authors/play/logic_knights_knaves"}
	if setting == schemas.SettingTools {
		names = []string{"tools_calendar", "tools_inventory"}
	}
	answers := envAnswers(t, names...)
	if setting == schemas.SettingTools {
		answers = authorsToolsAnswers(t) // the tools presets ask for the authors' ToolUseBaseEnv contract
	}
	return func(req *llm.ChatRequestBody) llmtest.Reply {
		think := ""
		if req.ChatTemplateKwargs["enable_thinking"] == true {
			think = "<think>\nLet me work it out.\n</think>\n\n"
		}
		if req.Model == "designer-model" {
			h := fnv.New32a()
			for _, m := range req.Messages {
				fmt.Fprint(h, m.Content)
			}
			return llmtest.Reply{Text: think + answers[int(h.Sum32())%len(answers)]}
		}
		last := req.Messages[len(req.Messages)-1].Content
		if setting == schemas.SettingTools {
			return llmtest.Reply{Text: think + toolCallFor(req, last)}
		}
		return llmtest.Reply{Text: think + fmt.Sprintf("I pick \\boxed{%d}", len(last)%4)}
	}
}

// authorsToolsAnswers are Designer answers with two programs of testdata/envs-authors/tools, written to
// the authors' tools contract, and a hint each.
func authorsToolsAnswers(t *testing.T) []string {
	t.Helper()
	var answers []string
	for _, c := range []struct{ file, hint string }{
		{"accept_stock_total.py", "Read the stock of both items with get_stock and add them."},
		{"accept_file_workflow_mt.py", "Create the report, archive a.txt, delete b.txt, then answer done."},
	} {
		code, err := os.ReadFile(repoFile(filepath.Join("testdata", "envs-authors", "tools", c.file)))
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, "```python\n"+string(code)+"\n```\n<hint>"+c.hint+"</hint>")
	}
	return answers
}

// toolCallFor calls the first tool named in the request's system prompt or tools, with no arguments.
func toolCallFor(req *llm.ChatRequestBody, last string) string {
	name := "lookup"
	for _, raw := range req.Tools {
		s := string(raw)
		if i := strings.Index(s, `"name":`); i >= 0 {
			rest := strings.TrimLeft(s[i+len(`"name":`):], ` "`)
			if j := strings.IndexByte(rest, '"'); j > 0 {
				name = rest[:j]
				break
			}
		}
	}
	return fmt.Sprintf("Checking.\n<tool_call>\n{\"name\": %q, \"arguments\": {}}\n</tool_call>", name)
}

// TestEveryPresetTrainsWhatTheServerServed runs two steps of each of the six presets, through grpo,
// against the emulator (Qwen3's real tokenizer and template, the hybrid one for 8B; vLLM's layout for
// half the presets, SGLang's for the others; one completion in three served with a non-canonical split).
// Every run finishes, no play is left out, and every trained token run of every batch is one completion
// the server served, in exactly the context it served it in.
func TestEveryPresetTrainsWhatTheServerServed(t *testing.T) {
	if testing.Short() {
		t.Skip("six two-step runs in the real sandbox; skipped with -short")
	}
	var presets []string
	for _, preset := range config.PresetNames() {
		// The fixed-environment presets play an imported pool and train no Designer: their runs are
		// TestPoolImportGPT55's and TestPoolImportRLVE's.
		if !strings.HasSuffix(preset, "-"+config.FixedGPT55) && !strings.HasSuffix(preset, "-"+config.FixedRLVE) {
			presets = append(presets, preset)
		}
	}
	for i, preset := range presets {
		t.Run(preset, func(t *testing.T) {
			which, layout := chattemplatetest.NonThinking, llmtest.LayoutVLLM
			if strings.HasPrefix(preset, "qwen3-8b") {
				which = chattemplatetest.Hybrid
			}
			if i%2 == 1 {
				layout = llmtest.LayoutSGLang
			}
			setting := schemas.SettingGames
			if strings.HasSuffix(preset, "-tools") {
				setting = schemas.SettingTools
			}
			emu := llmtest.StartEmulator(t, chattemplatetest.Start(t, which), presetScript(t, setting),
				llmtest.EmulatorOptions{DriftEvery: 3, Layout: layout}, "designer-model", "agent-model")
			dir := t.TempDir()
			env := []string{"SPADE_LAKE=" + dir, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN=p", "OPENAI_API_KEY="}
			must(t, env, "corpus", "import", "--name", "testdata", repoFile("testdata/corpus/corpus.jsonl"))
			must(t, env, "init", "--preset", preset,
				"--set", "llm.designer.base_url="+emu.URL, "--set", "llm.designer.model=designer-model",
				"--set", "llm.agent.base_url="+emu.URL, "--set", "llm.agent.model=agent-model",
				"--set", "sample.corpus=testdata", "--set", "sample.envs_per_step=2", "--set", "sample.refresh_every=2",
				"--set", "rollout.group_size=2", "--set", "rollout.plays_per_env=group_size", "--set", "grpo.batch_fill=pad", "--set", "grpo.batch_cut=random", "--set", "rollout.hinted_group_size=2", "--set", "rollout.max_turns=3",
				"--set", "gate.max_attempts=2", "--set", "grpo.final_step=1") // the run's last step flushes the Designer's samples
			r := spade(t, env, "", "run", "--steps", "0-1")
			if r.code != 0 {
				t.Fatalf("spade run: exit %d\n%s\n%s", r.code, tail(r.stdout, 20), tail(r.stderr, 20))
			}
			if strings.Contains(r.stdout+r.stderr, "left out") {
				t.Errorf("plays were left out:\n%s", tail(r.stdout+r.stderr, 20))
			}
			ctx := context.Background()
			lk, err := lake.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Preset(preset)
			if err != nil {
				t.Fatal(err)
			}
			trained, agentRuns := 0, 0
			for step := int64(0); step < 2; step++ {
				rows, err := lake.ReadStep[schemas.GRPOBatchRow](ctx, lk, "p", schemas.GRPOBatchesSpec.Name, step)
				if err != nil {
					t.Fatal(err)
				}
				var agent []schemas.GRPOBatchRow
				for _, r := range rows {
					if r.Role == schemas.RoleAgent {
						agent = append(agent, r)
					}
				}
				runs := trainedRunsOf(t, emu, agent)
				if want := unhintedCompletions(t, ctx, lk, step, cfg.GRPO.CompactFilter); runs != want {
					t.Errorf("step %d: %d Agent completions trained, want every unhinted one the server sampled, once: %d", step, runs, want)
				}
				trained += trainedRunsOf(t, emu, rows)
				agentRuns += runs
			}
			if trained == 0 || setting == schemas.SettingGames && agentRuns == 0 {
				t.Fatalf("%d token runs trained, %d of them the Agent's", trained, agentRuns)
			}
		})
	}
}

// trainedRunsOf checks the batch rows against what the emulator served (Emulator.CheckTrained) and
// returns the number of trained runs.
func trainedRunsOf(t *testing.T, emu *llmtest.Emulator, rows []schemas.GRPOBatchRow) int {
	t.Helper()
	runs, problems := emu.CheckTrained(rows)
	for _, p := range problems {
		t.Error(p)
	}
	return runs
}

// unhintedCompletions counts the Agent completions of a step's unhinted plays that GRPO is to train: the
// turns with sampled ids of plays that did not fail, less those grpo.compact_filter masks (plays that
// ran out).
func unhintedCompletions(t *testing.T, ctx context.Context, lk *lake.Lake, step int64, compact bool) int {
	t.Helper()
	episodes, err := lake.ReadStep[schemas.EpisodeRow](ctx, lk, "p", schemas.EpisodesSpec.Name, step)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := lake.ReadStep[schemas.TurnRow](ctx, lk, "p", schemas.TurnsSpec.Name, step)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, "p", schemas.LLMCallsSpec.Name, step)
	if err != nil {
		t.Fatal(err)
	}
	sampled := map[string]bool{}
	for _, c := range calls {
		sampled[c.CallID] = len(c.CompletionTokenIDs) > 0
	}
	trains := map[string]bool{}
	for _, e := range episodes {
		failed := e.EndedBy == schemas.EndedEnvError || e.EndedBy == schemas.EndedTimeout || e.EndedBy == schemas.EndedAgentError
		ranOut := e.EndedBy == schemas.EndedMaxTurns || e.EndedBy == schemas.EndedTruncated
		trains[e.EpisodeID] = !e.Hinted && !failed && !(compact && ranOut)
	}
	n := 0
	for _, tr := range turns {
		if trains[tr.EpisodeID] && sampled[tr.CallID] {
			n++
		}
	}
	return n
}
