package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

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

// ParseFeedback is the observation the Agent gets after an answer that could not be parsed.
func ParseFeedback(setting string, err error) string {
	if setting == "tools" {
		return fmt.Sprintf("Your answer could not be executed: %v. Answer with exactly one call to one of the available tools.", err)
	}
	return fmt.Sprintf("Your answer could not be executed: %v. End your answer with <action>your action</action>.", err)
}
