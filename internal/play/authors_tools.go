package play

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
)

// AuthorsToolCall is one call read from a tools answer under rollout.tool_calls authors: the name and
// the arguments as execute_tool receives them (any JSON value: a call whose arguments are not an object
// still runs, and the program's tool answers it with its error).
type AuthorsToolCall struct {
	Name      any
	Arguments any
}

// AuthorsToolTurn is a tools answer read as the authors' tool-use actor reads it.
type AuthorsToolTurn struct {
	// Answer is true when the text holds an <answer>…</answer>: the env's step gets the whole text.
	Answer bool
	// Calls are the calls to run through execute_tool, in order, when there is no answer.
	Calls []AuthorsToolCall
	// Malformed is true when the text writes <tool_call> and no call was read: the env's step gets the
	// whole text, and under rollout.malformed_tool_call mask the turn leaves the loss.
	Malformed bool
}

var (
	authorsAnswer    = regexp.MustCompile(`(?s)<answer>(.*?)</answer>`)
	authorsBlock     = regexp.MustCompile(`(?s)<tool_call>(.*?)</tool_call>`)
	authorsFunction  = regexp.MustCompile(`(?s)<function=(\w+)>(.*?)</function>`)
	authorsParameter = regexp.MustCompile(`(?s)<parameter=(\w+)>(.*?)</parameter>`)
	authorsJSONCall  = regexp.MustCompile(`(?s)\{\s*"name"\s*:\s*"(\w+)"\s*,\s*"arguments"\s*:\s*(\{.*?\})\s*\}`)
)

// ReadAuthorsToolTurn reads a tools answer's text as sampled (think part included) the authors' way. An
// <answer>…</answer> anywhere makes it an answer. Otherwise, when the env has tools (haveTools), each
// <tool_call>…</tool_call> block of the text (a trailing <|im_end|> cut, the rest trimmed), in order,
// gives a call when it holds the XML function form <function=NAME><parameter=KEY>VALUE</parameter>…
// </function> (each VALUE trimmed, HTML-unescaped, and read as JSON when it parses, else kept as text),
// else the JSON form: first {"name": "NAME", "arguments": {…}} found by pattern, its arguments read up
// to the first closing brace that ends the pattern (arguments that do not parse, nested objects among
// them, become {}), else the whole block as a JSON object with a "name" (its "arguments", else its
// "parameters", else {}; a string there is read as JSON, else {}). A block in neither form gives no call.
// serverCalls, the calls a server-side parser took out of the text, stand in when the text has no
// block. Malformed is set for a text that writes <tool_call> and gives no call.
func ReadAuthorsToolTurn(text string, haveTools bool, serverCalls []llm.ToolCall) AuthorsToolTurn {
	if authorsAnswer.MatchString(text) {
		return AuthorsToolTurn{Answer: true}
	}
	var turn AuthorsToolTurn
	body := strings.TrimSpace(strings.TrimSuffix(text, "<|im_end|>"))
	blocks := authorsBlock.FindAllStringSubmatch(body, -1)
	if haveTools {
		for _, b := range blocks {
			if call, ok := authorsXMLCall(b[1]); ok {
				turn.Calls = append(turn.Calls, call)
			} else if call, ok := authorsJSONBlock(b[1]); ok {
				turn.Calls = append(turn.Calls, call)
			}
		}
		if len(blocks) == 0 {
			for _, c := range serverCalls {
				var args any = map[string]any{}
				if a := strings.TrimSpace(c.Function.Arguments); a != "" {
					if v, ok := decodeJSON(a); ok {
						args = v
					}
				}
				turn.Calls = append(turn.Calls, AuthorsToolCall{Name: c.Function.Name, Arguments: args})
			}
		}
	}
	turn.Malformed = len(turn.Calls) == 0 && strings.Contains(text, "<tool_call>")
	return turn
}

// authorsXMLCall reads the XML function form of one block.
func authorsXMLCall(block string) (AuthorsToolCall, bool) {
	fn := authorsFunction.FindStringSubmatch(block)
	if fn == nil {
		return AuthorsToolCall{}, false
	}
	args := map[string]any{}
	for _, p := range authorsParameter.FindAllStringSubmatch(fn[2], -1) {
		raw := html.UnescapeString(strings.TrimSpace(p[2]))
		if v, ok := decodeJSON(raw); ok {
			args[p[1]] = v
		} else {
			args[p[1]] = raw
		}
	}
	return AuthorsToolCall{Name: fn[1], Arguments: args}, true
}

// authorsJSONBlock reads the JSON form of one block.
func authorsJSONBlock(block string) (AuthorsToolCall, bool) {
	if m := authorsJSONCall.FindStringSubmatch(block); m != nil {
		var args any = map[string]any{}
		if v, ok := decodeJSON(m[2]); ok {
			args = v
		}
		return AuthorsToolCall{Name: m[1], Arguments: args}, true
	}
	v, ok := decodeJSON(strings.TrimSpace(block))
	obj, isObject := v.(map[string]any)
	if !ok || !isObject {
		return AuthorsToolCall{}, false
	}
	name, named := obj["name"]
	if !named {
		return AuthorsToolCall{}, false
	}
	args, found := obj["arguments"]
	if !found {
		if args, found = obj["parameters"]; !found {
			args = map[string]any{}
		}
	}
	if s, isString := args.(string); isString {
		if args, ok = decodeJSON(s); !ok {
			args = map[string]any{}
		}
	}
	return AuthorsToolCall{Name: name, Arguments: args}, true
}

// decodeJSON reads one JSON value (numbers kept as written), and whether text is exactly that.
func decodeJSON(text string) (any, bool) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	var rest any
	if d.Decode(&rest) == nil || d.More() {
		return nil, false
	}
	return v, true
}

// MalformedToolCallNote follows the env's reply to a turn whose <tool_call> gave no call, under
// rollout.malformed_tool_call mask: the form a call takes.
const MalformedToolCallNote = "\n\n[FORMAT] No tool call could be read from your <tool_call>. Write one as: " +
	`<tool_call>{"name": "<tool_name>", "arguments": {<args>}}</tool_call>`

// MasksMalformed reports whether a malformed tool-call turn leaves the loss (rollout.tool_calls authors
// with rollout.malformed_tool_call mask).
func MasksMalformed(cfg *config.Config) bool {
	return cfg.Setting == schemas.SettingTools && cfg.Rollout.ToolCalls == config.ToolCallsAuthors &&
		cfg.Rollout.MalformedToolCall == config.MalformedMask
}

// authorsCallText is a call as the turn's action records it: {"name": …, "arguments": …}.
func authorsCallText(c AuthorsToolCall) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(map[string]any{"name": c.Name, "arguments": c.Arguments}) != nil {
		return fmt.Sprintf("%v", c)
	}
	return strings.TrimSpace(b.String())
}
