package generate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spadekit/spade/stages/generate"
)

const envCode = `class Guess:
    def reset(self, seed):
        return "guess"

    def step(self, action):
        return "ok", 1.0, True, {"success": True}`

func TestParseDesignerToleratesUsualDeviations(t *testing.T) {
	cases := map[string]string{
		"canonical":     "```python\n" + envCode + "\n```\n<hint>bisect</hint>",
		"no lang tag":   "Here you go:\n```\n" + envCode + "\n```\nAnd the hint: <hint>bisect</hint> Enjoy.",
		"hint first":    "<hint>bisect</hint>\n\n```py\n" + envCode + "\n```",
		"tilde fence":   "~~~python\n" + envCode + "\n~~~\n<HINT> bisect </HINT>",
		"think block":   "<think>```python\nclass Draft: pass\n```</think>```python\n" + envCode + "\n```<hint>bisect</hint>",
		"several":       "Helper:\n```python\nx = 1\n```\nEnv:\n```python\n" + envCode + "\n```\n<hint>bisect</hint>",
		"long fence":    "````python\n" + envCode + "\n````\n<hint>bisect</hint>",
		"indented tail": "```python\n" + envCode + "\n```   \n<hint>\nbisect\n</hint>\n",
		// Qwen3 with enable_thinking: the template opened the block, the answer starts inside it.
		"qwen3 thinking": "a draft: ```python\nclass Draft: pass\n```\n<hint>wrong</hint>\n</think>\n\n```python\n" + envCode + "\n```\n<hint>bisect</hint>",
	}
	for name, text := range cases {
		got, err := generate.ParseDesigner(text, "stop")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got.Code != envCode || got.Hint != "bisect" {
			t.Errorf("%s: code %q hint %q", name, got.Code, got.Hint)
		}
	}
}

// Bad input: no code, truncated code, no hint, code that is not an environment.
func TestParseDesignerRejectsWithReason(t *testing.T) {
	cases := []struct {
		name, text, finish string
		want               error
	}{
		{"prose only", "I cannot design that.", "stop", generate.ErrNoCode},
		{"truncated fence", "```python\n" + envCode[:60], "length", generate.ErrTruncated},
		{"open fence", "```python\n" + envCode + "\n<hint>x</hint>", "stop", generate.ErrTruncated},
		{"truncated hint", "```python\n" + envCode + "\n```\n<hint>bise", "length", generate.ErrTruncated},
		{"no hint", "```python\n" + envCode + "\n```", "stop", generate.ErrNoHint},
		{"empty hint", "```python\n" + envCode + "\n```<hint>  </hint>", "stop", generate.ErrNoHint},
		{"not an env", "```python\nprint('hi')\n```<hint>x</hint>", "stop", generate.ErrNotEnv},
		{"open think", "<think>let me see", "length", generate.ErrTruncated},
		// A think block cut off after a complete-looking draft is a failed attempt, never its draft.
		{"open think after a draft", "<think>```python\n" + envCode + "\n```\n<hint>bisect</hint>", "length", generate.ErrTruncated},
		{"open think stop", "```python\n" + envCode + "\n```\n<hint>bisect</hint><think>and more", "stop", generate.ErrTruncated},
		{"empty", "", "stop", generate.ErrNoCode},
	}
	for _, tc := range cases {
		_, err := generate.ParseDesigner(tc.text, tc.finish)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: empty reason", tc.name)
		}
	}
}

// A program in the authors' tools contract defines no step() of its own: its class derives from
// ToolUseBaseEnv, which gives it one, and it parses; the same class without the base does not.
func TestParseDesignerToolUseBaseEnv(t *testing.T) {
	code := "class ShelfEnv(ToolUseBaseEnv):\n    def reset(self, seed=None):\n        return 'Add a book.', {}\n\n    def solution(self):\n        return '<answer>done</answer>'\n"
	d, err := generate.ParseDesigner("```python\n"+code+"```\n<hint>add it</hint>", "stop")
	if err != nil || d.Code != strings.TrimSpace(code) {
		t.Fatalf("%q %v", d.Code, err)
	}
	plain := strings.Replace(code, "(ToolUseBaseEnv)", "", 1)
	if _, err := generate.ParseDesigner("```python\n"+plain+"```\n<hint>add it</hint>", "stop"); !errors.Is(err, generate.ErrNotEnv) {
		t.Fatalf("a class without step() and without the base: %v", err)
	}
}
