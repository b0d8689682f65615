package play

import (
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/llm"
)

func TestParseToolCallsReadsBothForms(t *testing.T) {
	text := "<think><tool_call>{\"name\":\"ignored\",\"arguments\":{}}</tool_call></think>Sure.\n" +
		"<tool_call>\n{\"name\": \"move\", \"parameters\": {\"dx\": 1,  \"dy\": -2}}\n</tool_call>" +
		"<tool_call>{\"name\":\"say\",\"arguments\":\"{\\\"text\\\": \\\"hi\\\"}\"}</tool_call>" +
		"<tool_call>\n<function=write>\n<parameter=path>\na&amp;b.txt\n</parameter>\n<parameter=count>\n3\n</parameter>\n<parameter=opts>\n{\"x\": true}\n</parameter>\n</function>\n</tool_call>" +
		"<tool_call>not a call</tool_call>"
	calls, blocks := ParseToolCalls(text)
	if blocks != 4 || len(calls) != 3 {
		t.Fatalf("blocks %d, calls %+v", blocks, calls)
	}
	want := [][2]string{{"move", `{"dx":1,"dy":-2}`}, {"say", `{"text":"hi"}`}, {"write", `{"count":3,"opts":{"x":true},"path":"a&b.txt"}`}}
	for i, w := range want {
		if calls[i].Function.Name != w[0] || calls[i].Function.Arguments != w[1] || calls[i].Type != "function" {
			t.Errorf("call %d: %+v, want %v", i, calls[i], w)
		}
	}
}

func TestParseToolTurn(t *testing.T) {
	known := map[string]bool{"move": true}
	cases := []struct {
		name        string
		comp        llm.Completion
		finalAnswer bool
		actions     []string
		fromText    bool
		err         string
	}{
		{name: "preamble and two calls", fromText: true,
			comp:    llm.Completion{Outcome: llm.Outcome{Text: "First.\n<tool_call>\n{\"name\": \"move\", \"arguments\": {\"dx\": 1}}\n</tool_call>\n<tool_call>{\"name\":\"move\",\"arguments\":{}}</tool_call>"}},
			actions: []string{`{"name":"move","arguments":{"dx":1}}`, `{"name":"move","arguments":{}}`}},
		{name: "answer first", finalAnswer: true,
			comp:    llm.Completion{Outcome: llm.Outcome{Text: "<tool_call>{\"name\":\"move\",\"arguments\":{}}</tool_call><answer> done </answer>"}},
			actions: []string{"<answer>done</answer>"}},
		{name: "answer ignored without final answers",
			comp:    llm.Completion{Outcome: llm.Outcome{Text: "<tool_call>{\"name\":\"move\",\"arguments\":{}}</tool_call><answer>done</answer>"}},
			actions: []string{`{"name":"move","arguments":{}}`}, fromText: true},
		{name: "server-parsed calls",
			comp: llm.Completion{Outcome: llm.Outcome{ToolCalls: []llm.ToolCall{{ID: "c9", Function: llm.FunctionCall{Name: "move", Arguments: `{"dx": 2}`}},
				{Function: llm.FunctionCall{Name: "move"}}}}},
			actions: []string{`{"name":"move","arguments":{"dx":2}}`, `{"name":"move","arguments":{}}`}},
		{name: "text preferred over server calls", fromText: true,
			comp: llm.Completion{Outcome: llm.Outcome{Text: "<tool_call>{\"name\":\"move\",\"arguments\":{\"dx\":3}}</tool_call>",
				ToolCalls: []llm.ToolCall{{Function: llm.FunctionCall{Name: "move", Arguments: `{"dx": 2}`}}}}},
			actions: []string{`{"name":"move","arguments":{"dx":3}}`}},
		{name: "malformed", comp: llm.Completion{Outcome: llm.Outcome{Text: "<tool_call>{\"name\": \"move\", </tool_call>"}}, err: "1 of the 1 <tool_call> blocks"},
		{name: "unknown tool", comp: llm.Completion{Outcome: llm.Outcome{Text: "<tool_call>{\"name\":\"fly\",\"arguments\":{}}</tool_call>"}}, err: `unknown tool "fly"`},
		{name: "prose", comp: llm.Completion{Outcome: llm.Outcome{Text: "no idea"}}, finalAnswer: true, err: "no tool call and no <answer>"},
	}
	for _, c := range cases {
		turn, err := ParseToolTurn(&c.comp, known, c.finalAnswer)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(turn.Actions, "|") != strings.Join(c.actions, "|") || turn.FromText != c.fromText {
			t.Errorf("%s: %+v %v, want %q from text %v", c.name, turn, err, c.actions, c.fromText)
		}
		if len(turn.Calls) > 0 && turn.Calls[0].ID == "" {
			t.Errorf("%s: call without an ID", c.name)
		}
	}
}

func TestAppendToolExchangeAnswersEveryServerCall(t *testing.T) {
	comp := &llm.Completion{Outcome: llm.Outcome{ToolCalls: []llm.ToolCall{{ID: "a", Function: llm.FunctionCall{Name: "move", Arguments: "{}"}},
		{Function: llm.FunctionCall{Name: "move", Arguments: "{}"}}}}}
	turn, err := ParseToolTurn(comp, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	msgs := AppendToolExchange(nil, comp, turn, []string{"r0", "r1"})
	if len(msgs) != 3 || len(msgs[0].ToolCalls) != 2 || msgs[1].ToolCallID != "a" || msgs[1].Content != "r0" ||
		msgs[2].ToolCallID != "call_1" || msgs[2].Content != "r1" {
		t.Fatalf("messages %+v", msgs)
	}
}
