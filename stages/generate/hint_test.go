package generate_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/stage"
)

// The hint writer is asked again when it answers nothing or fails, up to generate.hint_attempts calls
// (the presets' 3, as the authors retry theirs): with the first two answers empty, the third's hint is
// the env's and all three calls are returned, each under its own key; with 2 attempts the env keeps an
// empty hint.
func TestHintIsAskedAgainWhenItComesBackEmpty(t *testing.T) {
	for _, c := range []struct {
		attempts int
		want     string
		calls    int
	}{{3, "Watch the parity.", 3}, {2, "", 2}, {1, "", 1}} {
		var mu sync.Mutex
		hintCalls := 0
		script := func(req *llm.ChatRequestBody) llmtest.Reply {
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(req.Messages[0].Content, "hints") {
				return llmtest.Reply{Text: "unused"}
			}
			hintCalls++
			switch hintCalls {
			case 1:
				return llmtest.Reply{Text: "  \n"}
			case 2:
				return llmtest.Reply{Status: 500}
			}
			return llmtest.Reply{Text: "Watch the parity."}
		}
		srv := llmtest.Start(t, script, designerModel)
		cfg, err := config.Preset("qwen3-4b-games")
		if err != nil {
			t.Fatal(err)
		}
		cfg.LLM.Designer.BaseURL, cfg.LLM.Designer.Model = srv.URL, designerModel
		cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = srv.URL, designerModel
		cfg.LLM.MaxRetries = 0
		cfg.Generate.HintAttempts = c.attempts
		lk := laketest.New(t)
		laketest.NewRun(t, lk, "h", cfg)
		env, err := stage.NewEnv(context.Background(), lk, "h", nil)
		if err != nil {
			t.Fatal(err)
		}
		g, err := generate.NewGenerator(context.Background(), env, 0)
		if err != nil {
			t.Fatal(err)
		}
		hint, calls, err := g.Hint(context.Background(), schemas.EnvRow{EnvID: "env-1", PoolStep: 0, Slot: 2, Attempt: 1,
			Skill: schemas.SkillLogic, Setting: schemas.SettingGames, Code: "class E: pass"})
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		for _, call := range calls {
			keys[call.Key] = true
		}
		if hint != c.want || len(calls) != c.calls || len(keys) != c.calls || hintCalls != c.calls {
			t.Errorf("hint_attempts %d: hint %q from %d calls (%d keys, %d made), want %q from %d", c.attempts, hint, len(calls), len(keys), hintCalls, c.want, c.calls)
		}
	}
}
