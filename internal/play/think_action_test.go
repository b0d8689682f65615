package play_test

import (
	"errors"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/play"
)

// The think part never reaches the env: an action inside it is not played, an answer after Qwen3's
// template-opened block is, and a block that never closed is a failed answer even when it holds an action.
func TestActionParsingSkipsTheThinkPart(t *testing.T) {
	for _, c := range []struct {
		format     config.ActionFormat
		text, want string
		unclosed   bool
	}{
		{config.ActionTag, "<think><action>left</action></think><action>right</action>", "right", false},
		{config.ActionTag, "maybe <action>left</action>\n</think>\n\n<action>right</action>", "right", false},
		{config.ActionTag, "<think>I will say <action>left</action>", "", true},
		{config.ActionBoxed, `thinking \boxed{1}</think> so \boxed{2}`, "2", false},
		{config.ActionBoxed, `<think>so far \boxed{1}`, "", true},
	} {
		got, err := play.ParseAction(c.format, c.text)
		if got != c.want || c.unclosed != errors.Is(err, llm.ErrThinkUnclosed) || (!c.unclosed && err != nil) {
			t.Errorf("ParseAction(%s, %q) = %q, %v; want %q (unclosed %v)", c.format, c.text, got, err, c.want, c.unclosed)
		}
	}
	// Tools: a cut-off think block fails even when the server parsed a call out of it.
	comp := &llm.Completion{Outcome: llm.Outcome{Text: `<think>call it <tool_call>{"name":"read","arguments":{}}</tool_call>`,
		ToolCalls: []llm.ToolCall{{Type: "function", Function: llm.FunctionCall{Name: "read", Arguments: "{}"}}}}}
	if got, err := play.ParseToolTurn(comp, map[string]bool{"read": true}, true); !errors.Is(err, llm.ErrThinkUnclosed) || len(got.Actions) != 0 {
		t.Errorf("tools, unclosed think: %+v, %v", got, err)
	}
	comp = &llm.Completion{Outcome: llm.Outcome{Text: "<answer>no</answer>\n</think>\n<answer>done</answer>"}}
	if got, err := play.ParseToolTurn(comp, nil, true); err != nil || len(got.Actions) != 1 || got.Actions[0] != "<answer>done</answer>" {
		t.Errorf("tools, qwen3 thinking answer: %+v, %v", got, err)
	}
}
