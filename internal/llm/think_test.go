package llm_test

import (
	"errors"
	"testing"

	"github.com/spadekit/spade/internal/llm"
)

func TestStripThink(t *testing.T) {
	for _, c := range []struct {
		in, want string
		unclosed bool
	}{
		{"plain answer <action>a</action>", "plain answer <action>a</action>", false},
		{"<think>reason <action>x</action></think><action>a</action>", "<action>a</action>", false},
		{"pre<think>one</think>mid<think>two</think>post", "premidpost", false},
		// Qwen3 with enable_thinking: the template opened the block in the prompt.
		{"reasoning <action>x</action>\n</think>\n\n<action>a</action>", "\n\n<action>a</action>", false},
		{"reasoning</think>ans<think>more</think>!", "ans!", false},
		{"<think>cut off while <action>x</action>", "", true},
		{"ok<think>done</think> then <think>cut", "", true},
		{"reasoning</think>ans<think>cut", "", true},
		{"<THINK>not a tag</THINK>", "<THINK>not a tag</THINK>", false},
	} {
		got, err := llm.StripThink(c.in)
		if c.unclosed != errors.Is(err, llm.ErrThinkUnclosed) || got != c.want {
			t.Errorf("StripThink(%q) = %q, %v; want %q, unclosed %v", c.in, got, err, c.want, c.unclosed)
		}
	}
}
