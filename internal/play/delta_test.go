package play_test

import (
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/chattemplate/chattemplatetest"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/play"
)

// The presets' text deltas are what Qwen3's own template adds for the new messages (get_token_delta's
// text): an observation after an answer, and a tools answer's two results grouped in one user turn.
func TestPresetTextDeltasAreQwen3s(t *testing.T) {
	tmpl := chattemplatetest.Start(t, chattemplatetest.NonThinking)
	cfg, err := config.Preset("qwen3-30b-a3b-tools")
	if err != nil {
		t.Fatal(err)
	}
	base := []llm.Message{{Role: "system", Content: "Play."}, {Role: "user", Content: "Start."},
		{Role: "assistant", Content: "Looking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>"}}
	tools := []llm.Message{{Role: "tool", Content: "one"}, {Role: "tool", Content: "two\nlines"}}
	for name, tc := range map[string]struct {
		added []llm.Message
		text  string
	}{
		"observation":  {[]llm.Message{{Role: "user", Content: "You see a door."}}, play.TokenIOText(cfg.Rollout.TokenIOTemplate, "You see a door.")},
		"tool results": {tools, play.TokenIOText(cfg.Rollout.TokenIOTemplate, play.ToolResultsText(cfg.Rollout.TokenIOToolResult, tools))},
	} {
		without, err := tmpl.Render(base, nil, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		with, err := tmpl.Render(append(append([]llm.Message(nil), base...), tc.added...), nil, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		delta, ok := strings.CutPrefix(with, without)
		if !ok || delta != tc.text {
			t.Errorf("%s: the preset's text %q, Qwen3's template adds %q", name, tc.text, delta)
		}
	}
}
