package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/shard"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

func TestParseScreenAnswer(t *testing.T) {
	got, reason, err := ParseScreenAnswer("1: yes\n2: no - nothing can delete events\n3: yes")
	if err != nil || len(got) != 3 || !got[0] || got[1] || !got[2] || reason != "nothing can delete events" {
		t.Fatalf("%v %q %v", got, reason, err)
	}
	got, reason, err = ParseScreenAnswer("1: yes\n3: yes")
	if err != nil || len(got) != 3 || got[1] || reason != "no verdict for this instruction" {
		t.Fatalf("missing line: %v %q %v", got, reason, err)
	}
	if _, _, err := ParseScreenAnswer("I think it is fine."); err == nil {
		t.Fatal("unreadable answer accepted")
	}
}

func TestToolsScreenThroughLLM(t *testing.T) {
	var calendar sample
	for _, s := range readSamples(t, repoPath("testdata", "envs")) {
		if s.Name == "tools_calendar" {
			calendar = s
		}
	}
	for _, c := range []struct {
		name, answer string
		accepted     bool
	}{
		{"all reachable", "1: yes\n2: yes\n3: yes", true},
		{"one unreachable", "1: yes\n2: yes\n3: no - nothing deletes the extras", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			server := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: c.answer} }, "screen-model")
			ctx := context.Background()
			lk := laketest.New(t)
			cfg, err := config.Preset("qwen3-4b-tools")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Generate.HintMode, cfg.Gate.Checks = config.HintInline, config.GateStrict
			for k, v := range map[string]string{"llm.screen.base_url": server.URL, "llm.screen.model": "screen-model"} {
				if err := cfg.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			laketest.NewRun(t, lk, "t1", cfg)
			cand := schemas.CandidateRow{Slot: 0, EnvID: "cal-0", Attempt: 1, Skill: schemas.SkillToolUse, Setting: schemas.SettingTools, Code: calendar.Code, Hint: calendar.Hint}
			laketest.Write(t, lk, lake.PartitionKey{Run: "t1", Table: schemas.CandidatesSpec.Name, Step: 0}, []schemas.CandidateRow{cand})
			res, err := stage.Within(ctx, poolEnv(t, lk, "t1", newPool(t, sandbox.IsolationBwrap), shard.All), stage.Gate, 0, func(ctx context.Context, env *stage.Env, step int64) (Result, error) {
				return Run(ctx, env, step, Options{})
			})
			if err != nil {
				t.Fatal(err)
			}
			if (res.Accepted == 1) != c.accepted {
				t.Fatalf("accepted %d, want %v", res.Accepted, c.accepted)
			}
			rows, err := lake.ReadRows[schemas.GateResultRow](ctx, lk, lake.PartitionKey{Run: "t1", Table: schemas.GateResultsSpec.Name, Step: 0})
			if err != nil {
				t.Fatal(err)
			}
			last := rows[len(rows)-1]
			if last.Check != CheckToolsScreen || last.Passed != c.accepted || (!c.accepted && !strings.Contains(last.Error, "nothing deletes the extras")) {
				t.Fatalf("screen row %+v", last)
			}
			calls, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, "t1", schemas.LLMCallsSpec.Name, 0)
			if err != nil || len(calls) != 1 || calls[0].Role != schemas.RoleScreen {
				t.Fatalf("llm_calls: %+v, %v", calls, err)
			}
		})
	}
}
