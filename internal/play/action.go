package play

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
)

var (
	actionRE    = regexp.MustCompile(`(?is)<action>(.*?)</action>`)
	thinkStrip  = regexp.MustCompile(`(?s)<think>.*?</think>`)
	errNoAction = errors.New("no <action>…</action> in the answer")
)

// ParseGameAction returns the text of the last <action>…</action> of an answer, trimmed, after removing
// <think> blocks. An answer without one, with an empty one, or with an unclosed tag is an error that says
// which.
func ParseGameAction(text string) (string, error) {
	text = thinkStrip.ReplaceAllString(text, "")
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
// removing <think> blocks. Braces nest (\boxed{\frac{1}{2}} is \frac{1}{2}); a content that is one
// braced group as a whole loses up to two such wrappings (\boxed{{A}} is A), as the authors' extractor
// does. An answer without one, with only an unclosed one, or whose last one is empty is an error that
// says which.
func ParseBoxedAction(text string) (string, error) {
	text = thinkStrip.ReplaceAllString(text, "")
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

// ParseToolAction turns the first tool call of an answer into the env's action JSON. No tool call, an
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

var answerRE = regexp.MustCompile(`(?is)<answer>(.*?)</answer>`)

// ParseToolTurn reads a tools answer: its first tool call as ParseToolAction does, or, when finalAnswer
// is set (ToolsFinalAnswer) and the answer has no tool call, its last <answer>…</answer> outside <think>
// blocks, returned as the plain text "<answer>CONTENT</answer>" (CONTENT trimmed) for the env's step.
// An answer with both a tool call and an <answer> plays the tool call (the authors' collector steps the
// <answer> first); the conversation then records the call and its result as a tool message.
func ParseToolTurn(comp *llm.Completion, known map[string]bool, finalAnswer bool) (string, error) {
	if len(comp.ToolCalls) > 0 || !finalAnswer {
		return ParseToolAction(comp.ToolCalls, known)
	}
	matches := answerRE.FindAllStringSubmatch(thinkStrip.ReplaceAllString(comp.Text, ""), -1)
	if len(matches) == 0 {
		return "", errors.New("no tool call and no <answer>…</answer> in the answer")
	}
	answer := strings.TrimSpace(matches[len(matches)-1][1])
	if answer == "" {
		return "", errors.New("the <answer></answer> is empty")
	}
	return "<answer>" + answer + "</answer>", nil
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
