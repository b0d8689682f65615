package rollout_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/chattemplate/chattemplatetest"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/grpo"
)

// newEmulatorFixture is a fixture whose Agent is served by the emulator: Qwen3's real tokenizer and
// template (which), one completion in three served with a non-canonical split. The config is preset's,
// with smaller groups.
func newEmulatorFixture(t *testing.T, preset string, which chattemplatetest.Template, envs []schemas.EnvRow, script llmtest.Script, mutate func(*config.Config)) (*fixture, *llmtest.Emulator) {
	t.Helper()
	cfg, err := config.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Rollout.GroupSize, cfg.Rollout.HintedGroupSize, cfg.Rollout.MaxTurns = 6, 2, 6
	if mutate != nil {
		mutate(cfg)
	}
	emu := llmtest.StartEmulator(t, chattemplatetest.Start(t, which), script, 3, agentModel)
	cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = emu.URL, agentModel
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "r", cfg)
	laketest.Write(t, lk, lake.PartitionKey{Run: "r", Table: "envs", Step: envs[0].PoolStep}, envs)
	s := llm.SettingsFromConfig(cfg, "")
	s.MaxRetries, s.BackoffBase, s.BackoffMax = 2, time.Millisecond, 2*time.Millisecond
	client, err := llm.New(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{lk: lk, run: "r", cfg: cfg, client: client, pool: testPool(t, 8)}, emu
}

// servedScript answers every turn with a boxed move, some answers opening with a newline, some with a
// preamble that the BPE merges differently at the boundary.
func servedScript(req *llm.ChatRequestBody) llmtest.Reply {
	switch req.Seed % 4 {
	case 0:
		return llmtest.Reply{Text: "\nI will say \\boxed{7}"}
	case 1:
		return llmtest.Reply{Text: "Let's try: \\boxed{7}."}
	default:
		return llmtest.Reply{Text: "\\boxed{7}"}
	}
}

// runKey identifies a served completion in its context.
func runKey(prompt, completion []int64) string {
	return fmt.Sprint(prompt) + "|" + fmt.Sprint(completion)
}

// trainedRuns checks every Agent sample against what the emulator served: each run of trained tokens
// must be one served completion's ids, preceded by exactly the prompt the model saw, and no completion
// is trained more often than it was served. It returns the number of trained runs.
func trainedRuns(t *testing.T, samples []schemas.GRPOBatchRow, served []llmtest.Served) int {
	t.Helper()
	byKey := map[string]int{}
	for _, s := range served {
		byKey[runKey(s.Prompt, s.Completion)]++
	}
	seen := map[string]int{}
	for _, s := range samples {
		full := append(append([]int64(nil), int32s(s.PromptIDs)...), int32s(s.ResponseIDs)...)
		base := len(s.PromptIDs)
		for i := 0; i < len(s.ResponseIDs); {
			if !s.Trained(i) {
				i++
				continue
			}
			j := i
			for j < len(s.ResponseIDs) && s.Trained(j) {
				j++
			}
			key := runKey(full[:base+i], full[base+i:base+j])
			if byKey[key] == 0 {
				t.Errorf("sample %s: trained tokens %d..%d are no served completion in the context the server saw", s.SampleID, i, j)
			}
			seen[key]++
			i = j
		}
	}
	runs := 0
	for key, n := range seen {
		if n > byKey[key] {
			t.Errorf("a completion served %d times is trained %d times (%.60s…)", byKey[key], n, key)
		}
		runs += n
	}
	return runs
}

func int32s(ids []int32) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

// Against a server with Qwen3's real tokenizer and template that sometimes samples a non-canonical split:
// chat mode's episode samples break at a drifted completion and those plays are left out and counted,
// while token mode (the Qwen3 ChatML text around each observation, tokenized by the server) assembles
// every play, each trained token run exactly one served completion in exactly the context it was served
// in, every unhinted completion trained once.
func TestEmulatorTrainsExactlyWhatWasServed(t *testing.T) {
	env := envRow(0, 0, counterEnv, "say 7", schemas.SkillMath, "games")
	for _, mode := range []config.TokenIO{config.TokenIOChat, config.TokenIOTokens} {
		t.Run(string(mode), func(t *testing.T) {
			f, emu := newEmulatorFixture(t, "qwen3-30b-a3b-games", chattemplatetest.NonThinking, []schemas.EnvRow{env}, servedScript, func(c *config.Config) {
				if mode == config.TokenIOTokens {
					c.Rollout.TokenIO, c.Rollout.TokenIOTemplate = config.TokenIOTokens, "\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n"
				}
			})
			f.rollout(t, 0)
			episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
			unhintedCalls := 0
			for _, e := range episodes {
				if e.EndedBy != schemas.EndedDone || e.Turns != 3 {
					t.Fatalf("episode %s ended %s after %d turns (%s); want done after 3", e.EpisodeID, e.EndedBy, e.Turns, e.Error)
				}
				if !e.Hinted {
					unhintedCalls += int(e.Turns)
				}
			}
			drifted := 0
			for _, s := range emu.Served() {
				if s.Drifted {
					drifted++
				}
			}
			if drifted == 0 {
				t.Fatal("the emulator served no drifted completion")
			}
			asm, err := grpo.AssembleAgent(grpo.AgentInput{Episodes: episodes, Turns: readStep[schemas.TurnRow](t, f, "turns", 0),
				Calls: readStep[schemas.LLMCallRow](t, f, "llm_calls", 0), Unit: config.SampleEpisode, Std: config.AdvStdPopulation, Failed: config.FailedDrop})
			if err != nil {
				t.Fatal(err)
			}
			trained := trainedRuns(t, asm.Samples, emu.Served())
			switch mode {
			case config.TokenIOChat:
				if asm.LeftOut.BrokenPrefix == 0 || asm.LeftOut.Total() != asm.Plays-len(asm.Samples) {
					t.Errorf("chat mode: left out %v of %d plays, %d samples; want broken prefixes counted", asm.LeftOut, asm.Plays, len(asm.Samples))
				}
				if asm.LeftOut.First == nil || !strings.Contains(asm.LeftOut.First.Error(), "token") {
					t.Errorf("chat mode: first left-out error %v", asm.LeftOut.First)
				}
			case config.TokenIOTokens:
				if asm.LeftOut.Total() != 0 || len(asm.Samples) != asm.Plays || trained != unhintedCalls {
					t.Errorf("token mode: left out %v, %d samples of %d plays, %d completions trained of %d unhinted calls", asm.LeftOut, len(asm.Samples), asm.Plays, trained, unhintedCalls)
				}
			}
		})
	}
}
