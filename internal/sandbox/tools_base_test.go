package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// authorsToolProgram reads a program of testdata/envs-authors/tools.
func authorsToolProgram(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "envs-authors", "tools", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolTurn is one expected step of a ToolUseBaseEnv program: the Agent's text and the reply.
type toolTurn struct {
	action                string
	obs                   string
	reward                float64
	terminated, truncated bool
}

// playTools steps env through turns and compares each reply with the hand-computed one.
func playTools(t *testing.T, env *Env, turns []toolTurn) {
	t.Helper()
	for i, turn := range turns {
		res, err := env.Step(context.Background(), turn.action)
		if err != nil {
			t.Fatalf("turn %d (%q): %v", i+1, turn.action, err)
		}
		if res.Observation != turn.obs || res.Reward != turn.reward || res.Terminated != turn.terminated || res.Truncated != turn.truncated {
			t.Fatalf("turn %d (%q): got (%q, %v, terminated %v, truncated %v), want (%q, %v, %v, %v)", i+1, turn.action,
				res.Observation, res.Reward, res.Terminated, res.Truncated, turn.obs, turn.reward, turn.terminated, turn.truncated)
		}
	}
}

// TestToolUseBaseEnvPlays: programs written to the authors' tools contract (a ToolUseBaseEnv
// subclass with reset, solution and tool_ methods, the base never imported) load under the static
// check of the tools setting, and the injected base class answers each turn as the authors' base
// does: <answer> first, one <tool_call> JSON, format errors at -0.1, the pending instruction named
// after a wrong "done", the solution on the last turn; get_tools gives OpenAI function schemas and
// execute_tool runs a parsed call.
func TestToolUseBaseEnvPlays(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers, o.MaxTurns = 4, 4 })
	load := func(name string) *Program {
		prog, problems, err := p.LoadChecked(ctx, authorsToolProgram(t, name), "tools", DefaultStaticRules())
		if err != nil || len(problems) > 0 {
			t.Fatalf("%s: %v %v", name, problems, err)
		}
		t.Cleanup(func() { prog.Close() })
		return prog
	}

	stock := load("accept_stock_total.py")
	won, cut := mustEnv(t, stock), mustEnv(t, stock)
	obs, err := won.Reset(ctx, 42)
	if err != nil || obs != "How many bolts and nuts are in stock together? Reply with <answer>N</answer>." {
		t.Fatalf("reset: %q %v", obs, err)
	}
	raw, err := won.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var schemas []map[string]any
	if err := json.Unmarshal(raw, &schemas); err != nil {
		t.Fatal(err)
	}
	wantTools := `[{"function":{"description":"Units in stock of one item.","name":"get_stock","parameters":{"properties":{"item":{"type":"string"}},"required":["item"],"type":"object"}},"type":"function"},` +
		`{"function":{"description":"Names of every item.","name":"list_items","parameters":{"properties":{},"type":"object"}},"type":"function"}]`
	if got, _ := json.Marshal(schemas); string(got) != wantTools {
		t.Fatalf("get_tools:\n got %s\nwant %s", got, wantTools)
	}
	if err := validateSchemasForTest(raw); err != nil {
		t.Fatal(err)
	}
	formatError := "Format error: use tools to call a function, or <answer>result</answer> to submit."
	playTools(t, won, []toolTurn{
		{`\boxed{1}`, formatError, -0.1, false, false},
		{`<tool_call>{"name": "get_stock", "arguments": {"item": "bolt"}}</tool_call>`, "Tool result:\n12", 0, false, false},
		{`<tool_call>{"name": "drop", "arguments": {}}</tool_call>`, "Unknown tool 'drop'. Available: get_stock, list_items", 0, false, false},
		{`I add 12 and 30. <tool_call>{"name": "get_stock"}</tool_call> <answer> 42 </answer>`, "Correct!", 1, true, false},
	})
	if _, err := cut.Reset(ctx, 7); err != nil {
		t.Fatal(err)
	}
	sol, err := cut.Solution(ctx)
	if err != nil {
		t.Fatal(err)
	}
	playTools(t, cut, []toolTurn{
		{`<tool_call>{"name": get_stock}</tool_call>`, "Format error: invalid tool call arguments.", -0.1, false, false},
		{`<answer>41</answer>`, "Incorrect. Keep using tools.", 0, false, false},
		{`<tool_call>{"name": "__class__", "arguments": {}}</tool_call>`, "Unknown tool '__class__'. Available: get_stock, list_items", 0, false, false},
		{`<tool_call>{"name": "list_items", "arguments": []}</tool_call>`, "Tool result:\n[\"bolt\", \"nut\", \"washer\"]\n\nTime up. Solution:\n" + sol, 0, false, true},
	})
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"get_stock", map[string]any{"item": "nut"}, `{"output":"30","returncode":0}`},
		{"get_stock", map[string]any{"item": "screw"}, `{"output":"Error calling get_stock: 'screw'","returncode":1}`},
		{"nope", map[string]any{}, `{"output":"Unknown tool 'nope'","returncode":1}`},
		{"_tool_method", map[string]any{}, `{"output":"Unknown tool '_tool_method'","returncode":1}`},
	} {
		got, err := won.Eval(ctx, "execute_tool", c.name, c.args)
		var v any
		if err == nil {
			err = json.Unmarshal(got, &v)
		}
		if b, _ := json.Marshal(v); err != nil || string(b) != c.want {
			t.Errorf("execute_tool(%q, %v) = %s %v, want %s", c.name, c.args, b, err, c.want)
		}
	}

	flow := mustEnv(t, load("accept_file_workflow_mt.py"))
	if obs, err := flow.Reset(ctx, 3); err != nil || obs != "Create report.txt containing 'ok'." {
		t.Fatalf("reset: %q %v", obs, err)
	}
	playTools(t, flow, []toolTurn{
		{`<answer>done</answer>`, "Incorrect. Keep using tools. Not all steps are complete \u2014 you are still on step 1/3: \"Create report.txt containing 'ok'.\" " +
			"Complete this step with the tools before submitting <answer>done</answer>.", 0, false, false},
		{`<tool_call>{"name": "create_file", "arguments": {"name": "report.txt", "text": "ok"}}</tool_call>`, "Tool result:\ncreated report.txt\n\n[NEXT] Archive a.txt.", 0, false, false},
		{`<tool_call>{"name": "archive_file", "arguments": {"name": "z.txt"}}</tool_call>`, "Tool result:\nError calling archive_file: no file z.txt", 0, false, false},
	})
	// a call the client parsed counts no turn: the next step is the fourth, the last of max_turns 4,
	// so the finished workflow still ends truncated with the solution
	if v, err := flow.Eval(ctx, "execute_tool", "archive_file", map[string]any{"name": "a.txt"}); err != nil || !strings.Contains(string(v), `archived a.txt\n\n[NEXT] Delete b.txt.`) {
		t.Fatalf("execute_tool(archive_file): %s %v", v, err)
	}
	playTools(t, flow, []toolTurn{
		{`<tool_call>{"name": "delete_file", "arguments": {"name": "b.txt"}}</tool_call>`, "Tool result:\ndeleted b.txt\n\n[ALL STEPS COMPLETE] Submit <answer>done</answer>." +
			"\n\nTime up. Solution:\ncreate_file(report.txt, ok); archive_file(a.txt); delete_file(b.txt); <answer>done</answer>", 0, false, true},
	})

	price := mustEnv(t, load("accept_own_max_turns.py"))
	if _, err := price.Reset(ctx, 0); err != nil {
		t.Fatal(err)
	}
	playTools(t, price, []toolTurn{
		{`<answer>1234.4</answer>`, "Incorrect. Keep using tools.", 0, false, false},
		{`<answer>1,234.5</answer>`, "Correct!", 1, true, false},
	})

	ledger := mustEnv(t, load("accept_injected_names.py"))
	if _, err := ledger.Reset(ctx, 0); err != nil {
		t.Fatal(err)
	}
	playTools(t, ledger, []toolTurn{
		{`<tool_call>{"name": "balance", "arguments": {"category": "rent"}}</tool_call>`, "Tool result:\n900", 0, false, false},
		{`<answer>$900</answer>`, "Correct!", 1, true, false},
	})
}

// validateSchemasForTest checks the shape every schema of get_tools has: type "function" and a
// function with a name, a description and an object of parameters.
func validateSchemasForTest(raw json.RawMessage) error {
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        *string        `json:"name"`
			Description *string        `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return err
	}
	for _, tool := range tools {
		if tool.Type != "function" || tool.Function.Name == nil || tool.Function.Description == nil || tool.Function.Parameters["type"] != "object" {
			return &Error{Kind: KindEnv, Op: "tools", Msg: "a schema without the OpenAI function shape"}
		}
	}
	return nil
}

// TestToolUseBaseEnvRefusals: the authors' tools programs the sandbox refuses, each with its reason:
// a reset that raises (the constructor calls it), an import that reaches the machine, a class that
// forgets the base (no step, no tools), and one that rewrites the shared base class when it loads.
func TestToolUseBaseEnvRefusals(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	for _, c := range []struct{ file, why string }{
		{"refuse_reset_raises.py", "KeyError: 'missing'"},
		{"refuse_imports_os.py", "os"},
		{"refuse_no_base.py", "expected a class with reset() and step(), found none"},
		{"refuse_patches_base.py", "changed the harness's globals.ToolUseBaseEnv"},
	} {
		prog, problems, err := p.LoadChecked(ctx, authorsToolProgram(t, c.file), "tools", DefaultStaticRules())
		if err == nil && len(problems) == 0 {
			var env *Env
			env, err = prog.NewEnv(ctx)
			if err == nil {
				env.Close()
			}
			prog.Close()
		}
		text := strings.Join(problems, "; ")
		if err != nil {
			text += err.Error()
		}
		if text == "" || !strings.Contains(text, c.why) {
			t.Errorf("%s: refused with %q, want a reason naming %q", c.file, text, c.why)
		}
	}
}
