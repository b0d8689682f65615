package play

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/sandbox"
)

var (
	actionRE    = regexp.MustCompile(`(?is)<action>(.*?)</action>`)
	errNoAction = errors.New("no <action>…</action> in the answer")
)

// ParseGameAction returns the text of the last <action>…</action> of an answer, trimmed, after removing
// its think part (llm.StripThink). An answer without one, with an empty one, with an unclosed tag or
// with a <think> never closed (llm.ErrThinkUnclosed) is an error that says which.
func ParseGameAction(text string) (string, error) {
	text, err := llm.StripThink(text)
	if err != nil {
		return "", err
	}
	matches := actionRE.FindAllStringSubmatch(text, -1)
	if len(matches) == 0 {
		if strings.Contains(strings.ToLower(text), "<action>") {
			return "", errors.New("<action> is never closed with </action>")
		}
		return "", errNoAction
	}
	action := strings.TrimSpace(matches[len(matches)-1][1])
	if action == "" {
		return "", errors.New("the <action></action> is empty")
	}
	return action, nil
}

var errNoBoxed = errors.New(`no \boxed{…} in the answer`)

// ParseBoxedAction returns the content of the last complete \boxed{…} of an answer, trimmed, after
// removing its think part (llm.StripThink; a <think> never closed is llm.ErrThinkUnclosed). Braces nest (\boxed{\frac{1}{2}} is \frac{1}{2}); a content that is one
// braced group as a whole loses up to two such wrappings (\boxed{{A}} is A), as the authors' extractor
// does. An answer without one, with only an unclosed one, or whose last one is empty is an error that
// says which.
func ParseBoxedAction(text string) (string, error) {
	text, err := llm.StripThink(text)
	if err != nil {
		return "", err
	}
	const marker = `\boxed`
	found, unclosed := false, false
	var last string
	for rest := text; ; {
		at := strings.Index(rest, marker)
		if at < 0 {
			break
		}
		rest = rest[at+len(marker):]
		open := strings.TrimLeft(rest, " \t")
		if !strings.HasPrefix(open, "{") {
			continue // \boxedfoo or \boxed x: not a boxed answer
		}
		end := closingBrace(open)
		if end < 0 {
			unclosed = true
			break
		}
		found, last = true, open[1:end]
		rest = open[end+1:]
	}
	if !found {
		if unclosed {
			return "", errors.New(`\boxed{ is never closed with }`)
		}
		return "", errNoBoxed
	}
	answer := strings.TrimSpace(last)
	for range 2 {
		if len(answer) < 2 || answer[0] != '{' || closingBrace(answer) != len(answer)-1 {
			break
		}
		answer = strings.TrimSpace(answer[1 : len(answer)-1])
	}
	if answer == "" {
		return "", errors.New(`the \boxed{} is empty`)
	}
	return answer, nil
}

// EnvErrorReward is the reward of the step whose env raised or returned the wrong shape, under
// rollout.env_error score: the play ends there, terminated, as a lost game.
const EnvErrorReward = -1.0

// ScoresEnvErrors reports whether a step that raised, or returned the wrong shape, ends its play as a
// lost game with EnvErrorReward (rollout.env_error score) rather than as env_error.
func ScoresEnvErrors(cfg *config.Config) bool { return cfg.Rollout.EnvError == config.EnvErrorScore }

// The authors' load-time validation of an env instance: its seeds and its actions, fixed and public.
const (
	ValidationSeed       = 42
	ValidationReplaySeed = 123
)

// ValidationActions are the steps of the authors' load-time validation, in order.
var ValidationActions = []string{`\boxed{1}`, `\boxed{test}`, `\boxed{42}`}

// Validate plays the authors' load-time validation on an instance, as their loader does on the
// instance a play then resets (rollout.instance_warmup validation): reset(seed=ValidationSeed), each of
// ValidationActions until a step ends the episode, reset(seed=ValidationReplaySeed). It checks nothing
// of what comes back (the gate's official check does); the first failing call is the error.
func Validate(ctx context.Context, instance *sandbox.Env) error {
	if _, err := instance.Reset(ctx, ValidationSeed); err != nil {
		return fmt.Errorf("reset(seed=%d): %w", ValidationSeed, err)
	}
	for _, action := range ValidationActions {
		res, err := instance.Step(ctx, action)
		if err != nil {
			return fmt.Errorf("step(%q): %w", action, err)
		}
		if res.Done {
			break
		}
	}
	if _, err := instance.Reset(ctx, ValidationReplaySeed); err != nil {
		return fmt.Errorf("reset(seed=%d): %w", ValidationReplaySeed, err)
	}
	return nil
}

// PassesBoxed reports whether a games answer reaches the env as BoxedStepAction makes it: the games
// setting with rollout.action_format boxed and rollout.action_passing boxed.
func PassesBoxed(cfg *config.Config) bool {
	return cfg.Setting != "tools" && cfg.Rollout.ActionFormat == config.ActionBoxed && cfg.Rollout.ActionPassing == config.ActionPassBoxed
}

// VisibleAnswer is the part of an answer that a move is read from: what follows its last </think>, or
// the whole answer when it has none (an unclosed <think> included).
func VisibleAnswer(text string) string {
	if at := strings.LastIndex(text, "</think>"); at >= 0 {
		return text[at+len("</think>"):]
	}
	return text
}

// plainBoxed are the boxed forms looked for first, in order, each at its leftmost match: a box whose
// content holds no brace, then the same wrapped in one and in two more pairs of braces.
var plainBoxed = []*regexp.Regexp{
	regexp.MustCompile(`\\boxed\{([^{}]+)\}`),
	regexp.MustCompile(`\\boxed\{\{([^{}]+)\}\}`),
	regexp.MustCompile(`\\boxed\{\{\{([^{}]+)\}\}\}`),
}

// BoxedContent returns the move of an answer as the env's contract reads it, and whether there is one:
// the trimmed content of the first match of plainBoxed (tried in order); else, from the last \boxed,
// the first brace after it to the brace that closes it, the content trimmed and, while it starts with
// { and ends with } (at most twice), stripped of those two characters and trimmed again. An answer
// with no \boxed, or whose last \boxed is never closed, has none. The content may be empty.
func BoxedContent(text string) (string, bool) {
	for _, re := range plainBoxed {
		if m := re.FindStringSubmatch(text); m != nil {
			return strings.TrimSpace(m[1]), true
		}
	}
	at := strings.LastIndex(text, `\boxed`)
	if at < 0 {
		return "", false
	}
	open := strings.IndexByte(text[at:], '{')
	if open < 0 {
		return "", false
	}
	rest := text[at+open:]
	end := closingBrace(rest)
	if end < 0 {
		return "", false
	}
	content := strings.TrimSpace(rest[1:end])
	for range 2 {
		if strings.HasPrefix(content, "{") && strings.HasSuffix(content, "}") {
			content = strings.TrimSpace(content[1 : len(content)-1])
		}
	}
	return content, true
}

// BoxedStepAction is the action a games env's step receives under rollout.action_passing boxed:
// "\boxed{CONTENT}" for the answer's move (BoxedContent) when it is not empty, else the answer
// trimmed, so the env always steps and reads the command itself.
func BoxedStepAction(text string) string {
	if content, ok := BoxedContent(text); ok && content != "" {
		return `\boxed{` + content + "}"
	}
	return strings.TrimSpace(text)
}

// closingBrace returns the index of the brace that closes s[0] (an opening brace), or −1.
func closingBrace(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// ParseAction reads a games answer in rollout.action_format: ParseBoxedAction for boxed,
// ParseGameAction for tag.
func ParseAction(format config.ActionFormat, text string) (string, error) {
	if format == config.ActionBoxed {
		return ParseBoxedAction(text)
	}
	return ParseGameAction(text)
}

// ToolAction is the action a tool-use env receives: the call as JSON {"name": …, "arguments": {…}}.
type ToolAction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ParseToolAction turns the first of calls into the env's action JSON (ParseToolTurn calls it once per
// call). No tool call, an
// unknown tool, or arguments that are not a JSON object are errors naming the problem.
func ParseToolAction(calls []llm.ToolCall, known map[string]bool) (string, error) {
	if len(calls) == 0 {
		return "", errors.New("no tool call in the answer")
	}
	call := calls[0]
	if known != nil && !known[call.Function.Name] {
		return "", fmt.Errorf("unknown tool %q", call.Function.Name)
	}
	args := strings.TrimSpace(call.Function.Arguments)
	if args == "" {
		args = "{}"
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		return "", fmt.Errorf("arguments of %s are not a JSON object: %v", call.Function.Name, err)
	}
	raw, _ := json.Marshal(ToolAction{Name: call.Function.Name, Arguments: json.RawMessage(compactJSON(args))})
	return string(raw), nil
}

var (
	answerRE    = regexp.MustCompile(`(?is)<answer>(.*?)</answer>`)
	toolBlockRE = regexp.MustCompile(`(?s)<tool_call>(.*?)</tool_call>`)
	functionRE  = regexp.MustCompile(`(?s)<function=([^>\s]+)>(.*?)</function>`)
	parameterRE = regexp.MustCompile(`(?s)<parameter=([^>\s]+)>(.*?)</parameter>`)
)

// ParseToolCalls reads the tool calls written in an answer's text, outside <think> blocks, in order: each
// <tool_call>…</tool_call> block holds either Qwen3's JSON form {"name": N, "arguments": {…}} (a
// "parameters" key or a JSON-encoded string stands for the arguments) or the XML function form
// <function=N><parameter=K>V</parameter>…</function>, where V is trimmed, HTML-unescaped and taken as
// JSON when it parses (a number, a boolean, an object), else as a string. A call's arguments are
// compact JSON and its ID is empty. blocks counts the <tool_call> blocks, parsed or not, so that a
// caller can tell a malformed call (blocks > len(calls)) from an answer without one.
func ParseToolCalls(text string) (calls []llm.ToolCall, blocks int) {
	if stripped, err := llm.StripThink(text); err == nil {
		text = stripped
	}
	for _, m := range toolBlockRE.FindAllStringSubmatch(text, -1) {
		blocks++
		if call, ok := parseXMLCall(m[1]); ok {
			calls = append(calls, call)
		} else if call, ok := parseJSONCall(m[1]); ok {
			calls = append(calls, call)
		}
	}
	return calls, blocks
}

// parseXMLCall reads the XML function form of one <tool_call> block's content.
func parseXMLCall(block string) (llm.ToolCall, bool) {
	fn := functionRE.FindStringSubmatch(block)
	if fn == nil {
		return llm.ToolCall{}, false
	}
	args := map[string]any{}
	for _, p := range parameterRE.FindAllStringSubmatch(fn[2], -1) {
		raw := html.UnescapeString(strings.TrimSpace(p[2]))
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil {
			v = raw
		}
		args[p[1]] = v
	}
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false) // the value as written: a&b stays a&b, not a\u0026b
	_ = e.Encode(args)
	return llm.ToolCall{Type: "function", Function: llm.FunctionCall{Name: fn[1], Arguments: strings.TrimSpace(enc.String())}}, true
}

// parseJSONCall reads the JSON form of one <tool_call> block's content.
func parseJSONCall(block string) (llm.ToolCall, bool) {
	var obj struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(block)), &obj) != nil || obj.Name == "" {
		return llm.ToolCall{}, false
	}
	args := obj.Arguments
	if len(args) == 0 {
		args = obj.Parameters
	}
	var str string
	if json.Unmarshal(args, &str) == nil {
		args = json.RawMessage(str) // arguments given as a JSON-encoded string
	}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	return llm.ToolCall{Type: "function", Function: llm.FunctionCall{Name: obj.Name, Arguments: compactJSON(string(args))}}, true
}

// ToolTurn is a parsed tools answer: the env actions to step, in order, and where they came from.
type ToolTurn struct {
	// Actions are the env's step actions in order: one ToolAction JSON per call, or the single
	// "<answer>CONTENT</answer>".
	Actions []string
	// Calls are the answer's tool calls (empty for an <answer>), IDs filled as call_0, call_1, ….
	Calls []llm.ToolCall
	// FromText says the calls were read from the completion's text (ParseToolCalls) rather than from the
	// server's parsed message.tool_calls; the conversation then keeps the text verbatim.
	FromText bool
}

// ParseToolTurn reads a tools answer. When finalAnswer is set (ToolsFinalAnswer) and the text holds an
// <answer>…</answer> outside <think> blocks, that comes first, as the authors' collector checks it
// first: the last one, returned as "<answer>CONTENT</answer>" (CONTENT trimmed). Otherwise every tool
// call of the answer, in order: those written in the text (ParseToolCalls) when it holds any, else the
// server's parsed message.tool_calls. No call at all, a <tool_call> block that parses in neither form,
// an unknown tool or arguments that are not a JSON object are errors naming the problem (the turn then
// gets format feedback and steps nothing).
func ParseToolTurn(comp *llm.Completion, known map[string]bool, finalAnswer bool) (ToolTurn, error) {
	text, err := llm.StripThink(comp.Text)
	if err != nil {
		return ToolTurn{}, err // a truncated think block is a failed answer, whatever the server parsed
	}
	if finalAnswer {
		if matches := answerRE.FindAllStringSubmatch(text, -1); len(matches) > 0 {
			answer := strings.TrimSpace(matches[len(matches)-1][1])
			if answer == "" {
				return ToolTurn{}, errors.New("the <answer></answer> is empty")
			}
			return ToolTurn{Actions: []string{"<answer>" + answer + "</answer>"}}, nil
		}
	}
	calls, blocks := ParseToolCalls(text)
	turn := ToolTurn{FromText: blocks > 0}
	switch {
	case blocks > len(calls):
		return ToolTurn{}, fmt.Errorf("%d of the %d <tool_call> blocks parse neither as {\"name\": …, \"arguments\": {…}} nor as <function=NAME><parameter=ARG>VALUE</parameter></function>", blocks-len(calls), blocks)
	case blocks == 0:
		calls = comp.ToolCalls
	}
	if len(calls) == 0 {
		if finalAnswer {
			return ToolTurn{}, errors.New("no tool call and no <answer>…</answer> in the answer")
		}
		return ToolTurn{}, errors.New("no tool call in the answer")
	}
	for i, call := range calls {
		action, err := ParseToolAction([]llm.ToolCall{call}, known)
		if err != nil {
			return ToolTurn{}, err
		}
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%d", i)
		}
		if call.Type == "" {
			call.Type = "function"
		}
		turn.Actions = append(turn.Actions, action)
		turn.Calls = append(turn.Calls, call)
	}
	return turn, nil
}

// ToolsAnswerFeedback is the observation after a tools answer that could not be parsed when the episode
// ends with <answer>done</answer> (ToolsFinalAnswer).
func ToolsAnswerFeedback(err error) string {
	return fmt.Sprintf("Your answer could not be executed: %v. Answer with exactly one call to one of the available tools, or with <answer>done</answer> once every instruction is complete.", err)
}

func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// toolNames returns the function names declared by a tools() list.
func toolNames(tools []json.RawMessage) map[string]bool {
	names := map[string]bool{}
	for _, t := range tools {
		var decl struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(t, &decl) == nil {
			if decl.Function.Name != "" {
				names[decl.Function.Name] = true
			} else if decl.Name != "" {
				names[decl.Name] = true
			}
		}
	}
	return names
}

// ParseFeedback is the observation the Agent gets after an answer that could not be parsed; format is
// rollout.action_format (games only).
func ParseFeedback(setting string, format config.ActionFormat, err error) string {
	if setting == "tools" {
		return fmt.Sprintf("Your answer could not be executed: %v. Answer with exactly one call to one of the available tools.", err)
	}
	if format == config.ActionBoxed {
		return fmt.Sprintf("Your answer could not be executed: %v. End your answer with your move as \\boxed{your move}.", err)
	}
	return fmt.Sprintf("Your answer could not be executed: %v. End your answer with <action>your action</action>.", err)
}
