package play

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/spadekit/spade/internal/llm"
)

// ReadAuthorsToolTurn reads a dozen Agent answers as the authors' tool-use actor does (checked by hand
// against their parser run on the same strings): the calls each gives, in order, with their arguments,
// whether it is an answer (stepped with the whole text) and whether it is a malformed call (masked).
func TestReadAuthorsToolTurn(t *testing.T) {
	for _, c := range []struct {
		name, text string
		answer     bool
		calls      string // the calls as JSON [[name, arguments], ...]
		malformed  bool
	}{
		{"one JSON call", `<tool_call>{"name": "get_stock", "arguments": {"item": "bolt"}}</tool_call>`, false, `[["get_stock", {"item": "bolt"}]]`, false},
		{"two calls in order", "First.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"n\": 2}}\n</tool_call>", false, `[["a", {}], ["b", {"n": 2}]]`, false},
		{"XML function form", "<tool_call>\n<function=set_stock>\n<parameter=item>\nbolt\n</parameter>\n<parameter=quantity>\n12\n</parameter>\n<parameter=note>a &amp; b</parameter>\n</function>\n</tool_call>", false, `[["set_stock", {"item": "bolt", "quantity": 12, "note": "a & b"}]]`, false},
		{"nested arguments are lost to the pattern", `<tool_call>{"name": "f", "arguments": {"a": {"b": 1}}}</tool_call>`, false, `[["f", {}]]`, false},
		{"arguments before the name", `<tool_call>{"arguments": {"x": 1}, "name": "f"}</tool_call>`, false, `[["f", {"x": 1}]]`, false},
		{"parameters as a JSON string", `<tool_call>{"name": "f", "parameters": "{\"x\": 3}"}</tool_call>`, false, `[["f", {"x": 3}]]`, false},
		{"unreadable JSON", `<tool_call>{"name": get_stock}</tool_call>`, false, `[]`, true},
		{"an answer wins over a call", `I will call <tool_call>{"name": "f", "arguments": {}}</tool_call> and then <answer>42</answer>`, true, `[]`, false},
		{"an answer inside think counts", `<think>maybe <answer>1</answer></think><tool_call>{"name": "f", "arguments": {}}</tool_call>`, true, `[]`, false},
		{"prose", "Just prose, no call.", false, `[]`, false},
		{"unclosed block", `<tool_call>{"name": "f", "arguments": {}}`, false, `[]`, true},
		{"arguments that are a list", `<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>`, false, `[["f", [1, 2]]]`, false},
		{"the end-of-turn token", `<tool_call>{"name": "f", "arguments": {}}</tool_call><|im_end|>`, false, `[["f", {}]]`, false},
		{"a number as written", `<tool_call>{"name": "f", "arguments": {"n": 1.50}}</tool_call>`, false, `[["f", {"n": 1.5}]]`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ReadAuthorsToolTurn(c.text, true, nil)
			if got.Answer != c.answer || got.Malformed != c.malformed {
				t.Fatalf("answer %v malformed %v, want %v %v", got.Answer, got.Malformed, c.answer, c.malformed)
			}
			if c.answer {
				return
			}
			pairs := [][2]any{}
			for _, call := range got.Calls {
				pairs = append(pairs, [2]any{call.Name, call.Arguments})
			}
			if !sameJSON(t, pairs, c.calls) {
				b, _ := json.Marshal(pairs)
				t.Fatalf("calls %s, want %s", b, c.calls)
			}
		})
	}
	// an env without tools reads no call; a block the server's parser took out of the text stands in
	if got := ReadAuthorsToolTurn(`<tool_call>{"name": "f", "arguments": {}}</tool_call>`, false, nil); len(got.Calls) != 0 || !got.Malformed {
		t.Fatalf("no tools: %+v", got)
	}
	server := []llm.ToolCall{{Function: llm.FunctionCall{Name: "f", Arguments: `{"x": 1}`}}}
	if got := ReadAuthorsToolTurn("Calling.", true, server); len(got.Calls) != 1 || !sameJSON(t, got.Calls[0].Arguments, `{"x": 1}`) {
		t.Fatalf("server-parsed call: %+v", got)
	}
}

// sameJSON reports whether v and the JSON text want are the same value.
func sameJSON(t *testing.T, v any, want string) bool {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var a, w any
	if json.Unmarshal(b, &a) != nil || json.Unmarshal([]byte(want), &w) != nil {
		t.Fatalf("bad JSON %s / %s", b, want)
	}
	return reflect.DeepEqual(a, w)
}
