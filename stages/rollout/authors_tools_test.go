package rollout_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/schemas"
)

// workflowScript answers the file-workflow program by turn: a malformed <tool_call>, then two JSON
// calls in one answer, then the XML function form, then the closing answer.
func workflowScript(req *llm.ChatRequestBody) llmtest.Reply {
	turn := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	switch turn {
	case 0:
		return llmtest.Reply{Text: `I create it. <tool_call>{"name": create_file}</tool_call>`}
	case 1:
		return llmtest.Reply{Text: "<tool_call>\n{\"name\": \"create_file\", \"arguments\": {\"name\": \"report.txt\", \"text\": \"ok\"}}\n</tool_call>\n" +
			"<tool_call>\n{\"name\": \"archive_file\", \"arguments\": {\"name\": \"a.txt\"}}\n</tool_call>"}
	case 2:
		return llmtest.Reply{Text: "<tool_call>\n<function=delete_file>\n<parameter=name>\nb.txt\n</parameter>\n</function>\n</tool_call>"}
	}
	return llmtest.Reply{Text: "All three steps are done.\n<answer>done</answer>"}
}

// Under the tools presets' play (rollout.tool_calls authors, rollout.malformed_tool_call mask,
// rollout.agent_prompt observation) a program in the authors' contract plays as their tool-use actor
// plays it: the first message is the instruction alone, with the program's get_tools(); a <tool_call>
// that gives no call steps the env with the text (the base class's -0.1), is masked and answered with the
// format note; two calls of one answer run through execute_tool in order, each answered by its tool
// message, reward 0; the XML form runs too; <answer>done</answer> steps the env, which ends the play won.
func TestRolloutAuthorsToolCalls(t *testing.T) {
	code, err := os.ReadFile(filepath.Join("..", "..", "testdata", "envs-authors", "tools", "accept_file_workflow_mt.py"))
	if err != nil {
		t.Fatal(err)
	}
	env := envRow(0, 0, string(code), "create, archive, delete", schemas.SkillToolUse, "tools")
	f := newScriptedFixture(t, "tools", []schemas.EnvRow{env}, workflowScript, func(c *config.Config) {
		c.Rollout.ToolCalls, c.Rollout.MalformedToolCall, c.Rollout.AgentPrompt = config.ToolCallsAuthors, config.MalformedMask, config.AgentPromptObservation
		c.Rollout.InstanceWarmup, c.Rollout.EnvError, c.Rollout.TurnBudget = config.WarmupValidation, config.EnvErrorScore, config.TurnBudgetOwn
		c.Generate.HintMode, c.Rollout.HintPlacement, c.Rollout.HintedAt = config.HintSeparate, config.HintInObservation, config.HintedAtPoolStart
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.MaxTurns, c.Rollout.Return = 1, 0, 6, config.ReturnTerminal
	})
	f.rollout(t, 0)
	episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
	if len(episodes) != 1 {
		t.Fatalf("%d episodes", len(episodes))
	}
	if e := episodes[0]; !e.Success || e.EndedBy != schemas.EndedDone || e.Return != 1 || e.Turns != 4 {
		t.Fatalf("episode %+v", e)
	}
	turns := readStep[schemas.TurnRow](t, f, "turns", 0)
	want := []struct {
		action string
		reward float64
		masked bool
	}{
		{`I create it. <tool_call>{"name": create_file}</tool_call>`, -0.1, true},
		{`{"arguments":{"name":"report.txt","text":"ok"},"name":"create_file"}` + "\n" + `{"arguments":{"name":"a.txt"},"name":"archive_file"}`, 0, false},
		{`{"arguments":{"name":"b.txt"},"name":"delete_file"}`, 0, false},
		{"All three steps are done.\n<answer>done</answer>", 1, false},
	}
	for _, tr := range turns {
		w := want[tr.Turn]
		if tr.Action != w.action || tr.Reward != w.reward || tr.Masked() != w.masked {
			t.Errorf("turn %d: action %q reward %v masked %v (%q), want %q %v %v", tr.Turn, tr.Action, tr.Reward, tr.Masked(), tr.ParseError, w.action, w.reward, w.masked)
		}
	}
	requests := f.srv.Requests()
	if len(requests) != 4 {
		t.Fatalf("%d requests", len(requests))
	}
	last := requests[3]
	if len(last.Tools) != 3 || !strings.Contains(string(last.Tools[0]), `"create_file"`) {
		t.Fatalf("tools %s", last.Tools)
	}
	var got []string
	for _, m := range last.Messages {
		got = append(got, m.Role+": "+m.Content)
	}
	wantMessages := []string{
		"user: Create report.txt containing 'ok'.",
		`assistant: I create it. <tool_call>{"name": create_file}</tool_call>`,
		"user: Format error: invalid tool call arguments." + play.MalformedToolCallNote,
		"assistant: " + workflowScript(&llm.ChatRequestBody{Messages: []llm.Message{{Role: "assistant"}}}).Text,
		"tool: created report.txt\n\n[NEXT] Archive a.txt.",
		"tool: archived a.txt\n\n[NEXT] Delete b.txt.",
		"assistant: " + workflowScript(&llm.ChatRequestBody{Messages: []llm.Message{{Role: "assistant"}, {Role: "assistant"}}}).Text,
		"tool: deleted b.txt\n\n[ALL STEPS COMPLETE] Submit <answer>done</answer>.",
	}
	if strings.Join(got, "\n---\n") != strings.Join(wantMessages, "\n---\n") {
		t.Fatalf("the last request's messages:\n%s\nwant:\n%s", strings.Join(got, "\n---\n"), strings.Join(wantMessages, "\n---\n"))
	}
}
