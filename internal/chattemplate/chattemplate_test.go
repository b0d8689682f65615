package chattemplate_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/chattemplate/chattemplatetest"
)

// The encoder gives Qwen's published ids for a few well-known strings: the ChatML role headers every
// Qwen2/Qwen3 prompt starts with, and GPT-style pieces (a word with its leading space, one id per digit).
func TestQwen3KnownEncodings(t *testing.T) {
	h := chattemplatetest.Start(t, chattemplatetest.Hybrid)
	for text, want := range map[string][]int64{
		"<|im_start|>system\nYou are":        {151644, 8948, 198, 2610, 525},
		"<|im_start|>assistant\n":            {151644, 77091, 198},
		"Hello, world!":                      {9707, 11, 1879, 0},
		"12345":                              {16, 17, 18, 19, 20},
		"<think>\n\n</think>\n\n":            {151667, 271, 151668, 271},
		"<tool_call><|im_end|><|endoftext|>": {151657, 151645, 151643},
	} {
		got, err := h.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
	if h.EOS() != 151645 {
		t.Errorf("EOS = %d, want <|im_end|> 151645", h.EOS())
	}
}

// Decoding inverts encoding on mixed text (scripts, digits, whitespace runs, markers); replacing ids by
// their merge pieces spells the same text with other ids.
func TestQwen3RoundTripAndPieces(t *testing.T) {
	h := chattemplatetest.Start(t, chattemplatetest.Hybrid)
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"the", " quick", "函数", "  ", "\n\n", "\t", "42", "<|im_end|>", "naïve", "😀", "def f(x):", " \\boxed{7}", "'s", "ÅÉ"}
	for trial := 0; trial < 40; trial++ {
		var b strings.Builder
		for i := 0; i < 1+rng.IntN(12); i++ {
			b.WriteString(words[rng.IntN(len(words))])
		}
		text := b.String()
		ids, err := h.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		back, err := h.Decode(ids)
		if err != nil || back != text {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", text, back, err)
		}
		pieces, err := h.Pieces(ids)
		if err != nil {
			t.Fatal(err)
		}
		var split []int64
		changed := false
		for i, id := range ids {
			if len(pieces[i]) == 2 {
				split, changed = append(split, pieces[i]...), true
				continue
			}
			split = append(split, id)
		}
		if again, err := h.Decode(split); err != nil || again != text {
			t.Fatalf("the pieces of %q decode to %q, %v", text, again, err)
		}
		if changed && slices.Equal(split, ids) {
			t.Fatalf("split ids equal the canonical ones for %q", text)
		}
	}
}

// The hybrid template strips the think block of an assistant turn before the last user query and keeps
// the one after it; enable_thinking false opens an empty think block; the Instruct-2507 template renders
// assistant text as it is. Consecutive tool results share one user turn of <tool_response> blocks.
func TestQwen3Templates(t *testing.T) {
	hybrid := chattemplatetest.Start(t, chattemplatetest.Hybrid)
	plain := chattemplatetest.Start(t, chattemplatetest.NonThinking)
	msgs := []map[string]any{
		{"role": "user", "content": "go"},
		{"role": "assistant", "content": "<think>\nfirst\n</think>\n\nA"},
		{"role": "user", "content": "again"},
		{"role": "assistant", "content": "<think>\nsecond\n</think>\n\nB"},
	}
	text, err := hybrid.Render(msgs, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n" +
		"<|im_start|>assistant\n<think>\nsecond\n</think>\n\nB<|im_end|>\n"
	if text != want {
		t.Errorf("hybrid render:\n%q\nwant\n%q", text, want)
	}
	gen, err := hybrid.Render(msgs[:1], nil, true, map[string]any{"enable_thinking": false})
	if err != nil || !strings.HasSuffix(gen, "<|im_start|>assistant\n<think>\n\n</think>\n\n") {
		t.Errorf("enable_thinking false: %q, %v", gen, err)
	}
	kept, err := plain.Render(msgs, nil, true, nil)
	if err != nil || !strings.Contains(kept, "assistant\n<think>\nfirst\n</think>\n\nA<|im_end|>") || !strings.HasSuffix(kept, "<|im_start|>assistant\n") {
		t.Errorf("Instruct-2507 render: %q, %v", kept, err)
	}
	tools := []map[string]any{
		{"role": "user", "content": "look up"},
		{"role": "assistant", "content": "", "tool_calls": []map[string]any{
			{"type": "function", "function": map[string]any{"name": "a", "arguments": `{"x":1}`}},
			{"type": "function", "function": map[string]any{"name": "b", "arguments": `{}`}}}},
		{"role": "tool", "content": "one"},
		{"role": "tool", "content": "two"},
	}
	text, err = plain.Render(tools, nil, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantTail := "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\":1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	if !strings.HasSuffix(text, wantTail) {
		t.Errorf("tool turn:\n%q\nwant the tail\n%q", text, wantTail)
	}
	if _, err := plain.Decode([]int64{1 << 40}); err == nil || !strings.Contains(fmt.Sprint(err), "unknown token id") {
		t.Errorf("decoding an unknown id: %v, want its error", err)
	}
	if again, err := plain.Render(msgs[:1], nil, true, nil); err != nil || again != "<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("after an error the helper answers %q, %v", again, err)
	}
}
