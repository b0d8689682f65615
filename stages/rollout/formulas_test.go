package rollout_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/rollout"
)

func TestParseBoxedAction(t *testing.T) {
	for _, c := range []struct{ answer, want, err string }{
		{`So I guess \boxed{42}.`, "42", ""},
		{`First \boxed{1}, on second thought \boxed{ 7 }`, "7", ""},
		{`\boxed{\frac{1}{2}}`, `\frac{1}{2}`, ""},
		{`move: \boxed{go {north} twice}`, "go {north} twice", ""},
		{`\boxed{{A, B}}`, "A, B", ""},
		{`\boxed{{{x}}}`, "x", ""},
		{`\boxed{{a}{b}}`, "{a}{b}", ""},
		{`\boxed {left}`, "left", ""},
		{`<think>maybe \boxed{1}</think> final \boxed{2}`, "2", ""},
		{`complete \boxed{3} then truncated \boxed{4`, "3", ""},
		{`I would say 42.`, "", `no \boxed`},
		{`<think>\boxed{1}</think> no answer after thinking`, "", `no \boxed`},
		{`\boxed{12`, "", "never closed"},
		{`\boxed{}`, "", "empty"},
		{`\boxed{ {} }`, "", "empty"},
		{`\boxed 5`, "", `no \boxed`},
		{``, "", `no \boxed`},
	} {
		got, err := rollout.ParseBoxedAction(c.answer)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got %q, %v; want an error with %q", c.answer, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.answer, got, err, c.want)
		}
	}
	if got, err := rollout.ParseAction(config.ActionTag, `<action>5</action> \boxed{6}`); err != nil || got != "5" {
		t.Errorf("tag format read %q, %v", got, err)
	}
	if got, err := rollout.ParseAction(config.ActionBoxed, `<action>5</action> \boxed{6}`); err != nil || got != "6" {
		t.Errorf("boxed format read %q, %v", got, err)
	}
}

func TestEpisodeReturn(t *testing.T) {
	for _, c := range []struct {
		kind       config.ReturnKind
		rewards    []float64
		terminated bool
		want       float64
	}{
		{config.ReturnSum, []float64{0.5, 0.25, 1}, true, 1.75},
		{config.ReturnSum, []float64{0.5, 0.25}, false, 0.75},
		{config.ReturnSum, nil, false, 0},
		{config.ReturnTerminal, []float64{0.5, 0.25, 1}, true, 1},
		{config.ReturnTerminal, []float64{0.5, 0.25, 0.4}, true, 0.4},
		{config.ReturnTerminal, []float64{0.5, 3}, true, 1},
		{config.ReturnTerminal, []float64{0.5, -7}, true, -1},
		{config.ReturnTerminal, []float64{0.5, 0.25}, false, 0},
		{config.ReturnTerminal, nil, true, 0},
	} {
		if got := rollout.EpisodeReturn(c.kind, c.rewards, c.terminated); got != c.want {
			t.Errorf("%s %v terminated=%t: %v, want %v", c.kind, c.rewards, c.terminated, got, c.want)
		}
	}
}

func TestPlays(t *testing.T) {
	cfg, err := config.Preset("qwen3-30b-a3b-games")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sample.RefreshEvery = 4
	cfg.Rollout.PlaysPerEnv = config.PlaysGroupSize
	for _, c := range []struct {
		at                   config.HintedAt
		group, hinted        int
		step                 int64
		wantPlain, wantHints int
	}{
		{config.HintedAtPoolStart, 8, 16, 0, 8, 16},
		{config.HintedAtPoolStart, 8, 16, 1, 8, 0},
		{config.HintedAtPoolStart, 8, 16, 3, 8, 0},
		{config.HintedAtPoolStart, 8, 16, 4, 8, 16},
		{config.HintedAtEveryStep, 16, 16, 5, 16, 16},
		{config.HintedAtEveryStep, 4, 16, 5, 4, 4}, // hinted plays capped at group_size
		{config.HintedAtEveryStep, 8, 3, 6, 8, 3},
		{config.HintedAtEveryStep, 8, 0, 0, 8, 0},
	} {
		cfg.Rollout.HintedAt, cfg.Rollout.GroupSize, cfg.Rollout.HintedGroupSize = c.at, c.group, c.hinted
		plain, hints := rollout.Plays(cfg, c.step, 13)
		if plain != c.wantPlain || hints != c.wantHints {
			t.Errorf("%s group %d hinted %d step %d: %d and %d plays, want %d and %d", c.at, c.group, c.hinted, c.step, plain, hints, c.wantPlain, c.wantHints)
		}
	}
}

// TestPlaysFillTheBatch: under the presets' rollout.plays_per_env fill_batch each playable env plays
// ⌈global_batch / playable⌉ unhinted episodes at every step (192 over 24 = 8, over 20 = 9.6 → 10, over 13 =
// 14.8 → 15; the 4B tools 256 over 16 = 16), the hinted plays stay rollout.hinted_group_size at the pool's
// first step and none after it, and with no playable env the group size is kept.
func TestPlaysFillTheBatch(t *testing.T) {
	for _, c := range []struct {
		preset        string
		playable      int
		step          int64
		plain, hinted int
	}{
		{"qwen3-30b-a3b-games", 24, 0, 8, 16},
		{"qwen3-30b-a3b-games", 20, 0, 10, 16},
		{"qwen3-30b-a3b-games", 13, 0, 15, 16},
		{"qwen3-30b-a3b-games", 13, 1, 15, 0},
		{"qwen3-8b-tools", 20, 32, 10, 16},
		{"qwen3-4b-tools", 16, 0, 16, 4},
		{"qwen3-4b-tools", 13, 0, 20, 4},
		{"qwen3-30b-a3b-games", 0, 0, 8, 16},
	} {
		cfg, err := config.Preset(c.preset)
		if err != nil {
			t.Fatal(err)
		}
		plain, hinted := rollout.Plays(cfg, c.step, c.playable)
		if plain != c.plain || hinted != c.hinted {
			t.Errorf("%s, %d playable envs, step %d: %d unhinted and %d hinted plays, want %d and %d", c.preset, c.playable, c.step, plain, hinted, c.plain, c.hinted)
		}
	}
}

// Without a system prompt the first observation alone is the opening that is never cut.
func TestCutHistoryKeepsTheOpeningWithoutASystemPrompt(t *testing.T) {
	long := strings.Repeat("x", 400)
	messages := []llm.Message{{Role: "user", Content: "the task"}}
	for range 5 {
		messages = append(messages, llm.Message{Role: "assistant", Content: long}, llm.Message{Role: "user", Content: long})
	}
	cut := rollout.CutHistory(messages, 150)
	if cut[0].Content != "the task" || cut[1].Role != "assistant" || len(cut)%2 != 1 || len(cut) >= len(messages) {
		t.Fatalf("cut to %d messages starting %q, %q", len(cut), cut[0].Content, cut[1].Role)
	}
}

// The embedded prompts: tag format opens with the v1 system prompt and the bare observation; boxed
// opens with one user message framing the game around the observation; rollout.prompt_file gets the
// same data.
func TestOpeningOfEachPrompt(t *testing.T) {
	data := rollout.PromptData{MaxTurns: 9, Observation: rollout.FirstObservation("You see a door.", "knock twice", config.HintInObservation)}
	if !strings.HasSuffix(data.Observation, "You see a door.\n\nHINT: knock twice") {
		t.Fatalf("hinted first observation %q", data.Observation)
	}
	if got := rollout.FirstObservation("obs", "knock", config.HintInSystem); got != "obs" {
		t.Fatalf("system placement changed the observation: %q", got)
	}
	tag, err := rollout.LoadAgentTemplate(schemas.SettingGames, config.ActionTag, config.HintInline, "")
	if err != nil {
		t.Fatal(err)
	}
	open, err := rollout.Opening(tag, rollout.PromptData{MaxTurns: 9, Hint: "knock twice", Observation: "You see a door."})
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 2 || open[0].Role != "system" || !strings.Contains(open[0].Content, "<hint>knock twice</hint>") ||
		!strings.Contains(open[0].Content, "at most 9 actions") || open[1].Content != "You see a door." {
		t.Fatalf("tag opening %+v", open)
	}
	boxed, err := rollout.LoadAgentTemplate(schemas.SettingGames, config.ActionBoxed, config.HintSeparate, "")
	if err != nil {
		t.Fatal(err)
	}
	open, err = rollout.Opening(boxed, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].Role != "user" || !strings.Contains(open[0].Content, data.Observation) ||
		!strings.Contains(open[0].Content, `\boxed{`) || !strings.Contains(open[0].Content, "game") {
		t.Fatalf("boxed opening %+v", open)
	}
	tools, err := rollout.LoadAgentTemplate(schemas.SettingTools, config.ActionBoxed, config.HintInline, "")
	if err != nil || tools.Name() != "agent_tools.v1.tmpl" {
		t.Fatalf("tools prompt %v, %v", tools, err)
	}
	open, err = rollout.Opening(tools, rollout.PromptData{MaxTurns: 9, Hint: "read first", Observation: "Pay the bill."})
	if err != nil || len(open) != 2 || open[0].Role != "system" || !strings.Contains(open[0].Content, "exactly one tool call") ||
		!strings.Contains(open[0].Content, "<hint>read first</hint>") || open[1].Content != "Pay the bill." {
		t.Fatalf("tools v1 opening %+v, %v", open, err)
	}
	// Tools under the authors' separate hints: agent_tools.v2, no system prompt (unless the hint is placed
	// there), the first instruction framed with the protocol and the closing <answer>done</answer>.
	for _, format := range []config.ActionFormat{config.ActionBoxed, config.ActionTag} {
		if name := rollout.PromptName(schemas.SettingTools, format, config.HintSeparate); name != "agent_tools.v2.tmpl" {
			t.Fatalf("tools, %s, separate: %s", format, name)
		}
	}
	tools2, err := rollout.LoadAgentTemplate(schemas.SettingTools, config.ActionBoxed, config.HintSeparate, "")
	if err != nil {
		t.Fatal(err)
	}
	tdata := rollout.PromptData{MaxTurns: 9, Observation: rollout.FirstObservation("Find order 12.", "look it up first", config.HintInObservation)}
	open, err = rollout.Opening(tools2, tdata)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].Role != "user" || !strings.HasSuffix(open[0].Content, "Find order 12.\n\nHINT: look it up first") ||
		!strings.Contains(open[0].Content, "<answer>done</answer>") || !strings.Contains(open[0].Content, "one instruction") ||
		!strings.Contains(open[0].Content, "at most 9 turns") || strings.Contains(open[0].Content, "{{") {
		t.Fatalf("tools v2 opening %+v", open)
	}
	open, err = rollout.Opening(tools2, rollout.PromptData{MaxTurns: 9, Hint: "look it up first", Observation: "Find order 12."})
	if err != nil || len(open) != 2 || open[0].Role != "system" || open[0].Content != "A hint about this environment:\n<hint>look it up first</hint>" ||
		!strings.HasSuffix(open[1].Content, "Instruction:\nFind order 12.") {
		t.Fatalf("tools v2 opening with the hint in the system prompt %+v, %v", open, err)
	}
	file := filepath.Join(t.TempDir(), "agent.tmpl")
	custom := "Turns {{.MaxTurns}}, format {{.ActionFormat}}.{{define \"first_user\"}}[{{.Observation}}]{{end}}"
	if err := os.WriteFile(file, []byte(custom), 0o644); err != nil {
		t.Fatal(err)
	}
	own, err := rollout.LoadAgentTemplate(schemas.SettingGames, config.ActionBoxed, config.HintSeparate, file)
	if err != nil {
		t.Fatal(err)
	}
	open, err = rollout.Opening(own, rollout.PromptData{MaxTurns: 3, ActionFormat: "boxed", Observation: "o"})
	if err != nil || len(open) != 2 || open[0].Content != "Turns 3, format boxed." || open[1].Content != "[o]" {
		t.Fatalf("prompt_file opening %+v, %v", open, err)
	}
	if _, err := rollout.LoadAgentTemplate(schemas.SettingGames, config.ActionTag, config.HintInline, filepath.Join(t.TempDir(), "missing.tmpl")); err == nil {
		t.Fatal("a missing prompt_file loaded")
	}
}
