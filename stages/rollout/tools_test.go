package rollout_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// errandsEnv is a multi-turn tools env in designer_tools.v3's contract: instructions revealed one at a
// time inside tool results, and step accepting the closing <answer>done</answer> as plain text.
const errandsEnv = `import json

class Errands:
    def tools(self):
        order = {"type": "string", "description": "order id"}
        return [
            {"type": "function", "function": {"name": "get_order", "description": "Read an order",
             "parameters": {"type": "object", "properties": {"order": order}, "required": ["order"]}}},
            {"type": "function", "function": {"name": "set_status", "description": "Change an order's status",
             "parameters": {"type": "object", "properties": {"order": order,
                            "status": {"type": "string", "enum": ["open", "shipped"]}}, "required": ["order", "status"]}}},
        ]

    def reset(self, seed):
        self.status = {"A1": "open"}
        self.read = False
        self.done = 0
        self.instructions = ["Look up order A1.", "Mark order A1 as shipped."]
        return self.instructions[0]

    def advance(self):
        conditions = [self.read, self.status["A1"] == "shipped"]
        if self.done < 2 and conditions[self.done]:
            self.done += 1
            if self.done == 2:
                return "\n\n[ALL STEPS COMPLETE] Reply <answer>done</answer>."
            return "\n\n[NEW INSTRUCTION] " + self.instructions[self.done]
        return ""

    def step(self, action):
        if action.startswith("<answer>"):
            if action == "<answer>done</answer>" and self.done == 2:
                return "Correct!", 1.0, True, {"success": True}
            return "Not every instruction is complete yet.", 0.0, False, {}
        call = json.loads(action)
        args = call["arguments"]
        if call["name"] == "get_order":
            self.read = True
            return json.dumps({"order": "A1", "status": self.status["A1"]}) + self.advance(), 0.0, False, {}
        if call["name"] == "set_status":
            self.status[args["order"]] = args["status"]
            return "updated" + self.advance(), 0.5, False, {}
        return "error: unknown tool", 0.0, False, {}
`

// errandsScript answers by turn: prose (no call, no answer), a premature <answer>done</answer>, the
// read, the write, and the closing answer in spaces after a think block.
func errandsScript(req *llm.ChatRequestBody) llmtest.Reply {
	call := func(name, args string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("call_%d", len(req.Messages)), Type: "function",
			Function: llm.FunctionCall{Name: name, Arguments: args}}}}
	}
	turn := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	switch turn {
	case 0:
		return llmtest.Reply{Text: "Let me think about the order."}
	case 1:
		return llmtest.Reply{Text: "<answer>done</answer>"}
	case 2:
		return call("get_order", `{"order": "A1"}`)
	case 3:
		return call("set_status", `{"order": "A1", "status": "shipped"}`)
	}
	return llmtest.Reply{Text: "<think>Is <answer>no</answer> right?</think>Everything is done.\n<answer> done </answer>"}
}

// Under the authors' settings (generate.hint_mode separate) a tools episode opens with agent_tools.v2
// (no system prompt), delivers a plain-text <answer>done</answer> to the env's step, and succeeds when
// the env accepts it; under inline hints the same answers are parse errors, as in agent_tools.v1 runs.
func TestRolloutToolsEndsWithAPlainTextAnswer(t *testing.T) {
	env := envRow(0, 0, errandsEnv, "read the order before changing it", schemas.SkillToolUse, "tools")
	f := newScriptedFixture(t, "tools", []schemas.EnvRow{env}, errandsScript, func(c *config.Config) {
		c.Generate.HintMode, c.Rollout.HintPlacement, c.Rollout.HintedAt = config.HintSeparate, config.HintInObservation, config.HintedAtPoolStart
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.MaxTurns, c.Rollout.Return = 1, 1, 6, config.ReturnTerminal
	})
	f.rollout(t, 0)
	episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
	if len(episodes) != 2 {
		t.Fatalf("%d episodes", len(episodes))
	}
	for _, e := range episodes {
		if !e.Success || e.EndedBy != schemas.EndedDone || e.Return != 1 || e.Turns != 5 {
			t.Fatalf("episode %+v", e)
		}
	}
	byEpisode := map[string][]schemas.TurnRow{}
	for _, tr := range readStep[schemas.TurnRow](t, f, "turns", 0) {
		byEpisode[tr.EpisodeID] = append(byEpisode[tr.EpisodeID], tr)
	}
	for id, turns := range byEpisode {
		want := []string{"", "<answer>done</answer>", `{"name":"get_order","arguments":{"order":"A1"}}`,
			`{"name":"set_status","arguments":{"order":"A1","status":"shipped"}}`, "<answer>done</answer>"}
		if len(turns) != len(want) {
			t.Fatalf("episode %s: %d turns", id, len(turns))
		}
		for _, tr := range turns {
			if tr.Action != want[tr.Turn] {
				t.Errorf("episode %s turn %d: action %q, want %q", id, tr.Turn, tr.Action, want[tr.Turn])
			}
		}
		if !strings.Contains(turns[0].ParseError, "no tool call and no <answer>") {
			t.Errorf("prose turn: parse error %q", turns[0].ParseError)
		}
	}
	requests := f.srv.Requests()
	if len(requests) != 10 {
		t.Fatalf("%d requests", len(requests))
	}
	hinted := 0
	for _, req := range requests {
		first := req.Messages[0]
		if first.Role != "user" || !strings.Contains(first.Content, "Instruction:\nLook up order A1.") ||
			!strings.Contains(first.Content, "<answer>done</answer>") {
			t.Fatalf("first message %+v", first)
		}
		if strings.HasSuffix(first.Content, "HINT: read the order before changing it") {
			hinted++
		}
		if len(req.Messages) == 5 { // after the premature answer: the env's reply as a user message
			if m := req.Messages[2]; !strings.Contains(m.Content, "could not be executed") || !strings.Contains(m.Content, "<answer>done</answer> once") {
				t.Errorf("feedback after prose %q", m.Content)
			}
			if m := req.Messages[4]; m.Role != "user" || m.Content != "Not every instruction is complete yet." {
				t.Errorf("env's reply to the premature answer %+v", m)
			}
		}
		if len(req.Tools) != 2 {
			t.Fatalf("request with %d tools", len(req.Tools))
		}
	}
	if hinted != 5 {
		t.Fatalf("%d requests of the hinted play carry the hint", hinted)
	}

	// Inline hints keep agent_tools.v1: a system prompt, and text answers are parse errors.
	g := newScriptedFixture(t, "tools", []schemas.EnvRow{env}, errandsScript, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.MaxTurns = 1, 0, 6
		c.Rollout.HintedAt = config.HintedAtPoolStart
	})
	g.rollout(t, 0)
	for _, e := range readStep[schemas.EpisodeRow](t, g, "episodes", 0) {
		if e.Success || e.EndedBy != schemas.EndedMaxTurns {
			t.Fatalf("inline episode %+v", e)
		}
	}
	for _, tr := range readStep[schemas.TurnRow](t, g, "turns", 0) {
		if (tr.Turn == 1 || tr.Turn >= 4) && tr.ParseError != "no tool call in the answer" {
			t.Errorf("inline turn %d: action %q, parse error %q", tr.Turn, tr.Action, tr.ParseError)
		}
	}
	if req := g.srv.Requests()[0]; req.Messages[0].Role != "system" || !strings.Contains(req.Messages[0].Content, "exactly one tool call") {
		raw, _ := json.Marshal(req.Messages[0])
		t.Fatalf("inline opening %s", raw)
	}
}

// textCallsScript writes its tool calls in the text, as a server without a tool parser returns them: a
// preamble and two calls in one answer (compact JSON, then the XML function form), a malformed block, and
// an <answer> beside a call.
func textCallsScript(req *llm.ChatRequestBody) llmtest.Reply {
	turn := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	switch turn {
	case 0:
		return llmtest.Reply{Text: textTwoCalls}
	case 1:
		return llmtest.Reply{Text: `<tool_call>{"name": "get_order", "arguments": {"order": </tool_call>`}
	}
	return llmtest.Reply{Text: `<tool_call>{"name":"get_order","arguments":{"order":"A1"}}</tool_call>` + "\n<answer>done</answer>"}
}

const textTwoCalls = "I'll read the order, then ship it.\n<tool_call>\n{\"name\":\"get_order\",\"arguments\":{\"order\":\"A1\"}}\n</tool_call>\n" +
	"<tool_call>\n<function=set_status>\n<parameter=order>\nA1\n</parameter>\n<parameter=status>\nshipped\n</parameter>\n</function>\n</tool_call>"

// Tool calls written in the completion's text are parsed by spade: both calls of one answer are stepped in
// order within the turn, the conversation keeps the text verbatim with one tool message per result, a
// block that parses in neither form is format feedback that steps nothing, and an <answer> is stepped
// before any call beside it.
func TestRolloutToolsParsesCallsFromText(t *testing.T) {
	env := envRow(0, 0, errandsEnv, "read the order before changing it", schemas.SkillToolUse, "tools")
	f := newScriptedFixture(t, "tools", []schemas.EnvRow{env}, textCallsScript, func(c *config.Config) {
		c.Generate.HintMode, c.Rollout.HintPlacement, c.Rollout.HintedAt = config.HintSeparate, config.HintInObservation, config.HintedAtPoolStart
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.MaxTurns, c.Rollout.Return = 1, 0, 6, config.ReturnTerminal
	})
	f.rollout(t, 0)
	episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
	if len(episodes) != 1 || !episodes[0].Success || episodes[0].EndedBy != schemas.EndedDone || episodes[0].Turns != 3 {
		t.Fatalf("episodes %+v", episodes)
	}
	turns := readStep[schemas.TurnRow](t, f, "turns", 0)
	if len(turns) != 3 {
		t.Fatalf("%d turns", len(turns))
	}
	wantAction := `{"name":"get_order","arguments":{"order":"A1"}}` + "\n" + `{"name":"set_status","arguments":{"order":"A1","status":"shipped"}}`
	if turns[0].Action != wantAction || turns[0].Reward != 0.5 || turns[0].ParseError != "" {
		t.Errorf("two-call turn: action %q reward %v error %q", turns[0].Action, turns[0].Reward, turns[0].ParseError)
	}
	if turns[1].Action != "" || !strings.Contains(turns[1].ParseError, "1 of the 1 <tool_call> blocks parse neither") {
		t.Errorf("malformed turn: action %q error %q", turns[1].Action, turns[1].ParseError)
	}
	if turns[2].Action != "<answer>done</answer>" || turns[2].Reward != 1 {
		t.Errorf("answer turn: action %q reward %v", turns[2].Action, turns[2].Reward)
	}
	requests := f.srv.Requests()
	if len(requests) != 3 {
		t.Fatalf("%d requests", len(requests))
	}
	second := requests[1].Messages
	if len(second) != 4 {
		t.Fatalf("second request: %d messages", len(second))
	}
	if a := second[1]; a.Role != "assistant" || a.Content != textTwoCalls || len(a.ToolCalls) != 0 {
		t.Errorf("assistant message %+v", a)
	}
	if m := second[2]; m.Role != "tool" || !strings.HasPrefix(m.Content, `{"order": "A1", "status": "open"}`) || m.ToolCallID != "call_0" {
		t.Errorf("first tool result %+v", m)
	}
	if m := second[3]; m.Role != "tool" || !strings.HasPrefix(m.Content, "updated") || m.ToolCallID != "call_1" {
		t.Errorf("second tool result %+v", m)
	}
	for _, req := range requests {
		if len(req.Tools) != 2 || req.ToolChoice != "none" {
			t.Fatalf("request with %d tools, tool_choice %q", len(req.Tools), req.ToolChoice)
		}
	}
	if m := requests[2].Messages[len(requests[2].Messages)-1]; m.Role != "user" || !strings.Contains(m.Content, "could not be executed") {
		t.Errorf("feedback after the malformed call %+v", m)
	}
}
