package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

// ExpectedCall is one call of a function_call item's reference: the function's name and, per argument,
// the values accepted (BFCL's possible answers; "" among them means the argument may be left out).
type ExpectedCall struct {
	Name string           `json:"name"`
	Args map[string][]any `json:"args"`
}

// Call is one call the Agent made: its name and decoded arguments.
type Call struct {
	Name string         `json:"name"`
	Args map[string]any `json:"arguments"`
}

// parseGroundTruth reads BFCL's ground truth, [{"fn": {"arg": [values...]}}, ...], into ExpectedCalls.
func parseGroundTruth(v any) ([]ExpectedCall, error) {
	if s, ok := v.(string); ok {
		var decoded any
		if err := json.Unmarshal([]byte(s), &decoded); err != nil {
			return nil, err
		}
		v = decoded
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	var out []ExpectedCall
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("call %d: want {\"function_name\": {\"arg\": [accepted values]}}", i+1)
		}
		for name, args := range m {
			am, ok := args.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("call %d (%s): arguments are not an object", i+1, name)
			}
			call := ExpectedCall{Name: name, Args: map[string][]any{}}
			for arg, vals := range am {
				accepted, ok := vals.([]any)
				if !ok {
					accepted = []any{vals}
				}
				call.Args[arg] = accepted
			}
			out = append(out, call)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no calls")
	}
	return out, nil
}

// ParseExpected reads bench_items.answer of a function_call item.
func ParseExpected(text string) ([]ExpectedCall, error) {
	var calls []ExpectedCall
	err := json.Unmarshal([]byte(text), &calls)
	return calls, err
}

var jsonBlockRE = regexp.MustCompile("(?s)```(?:json)?\\s*(.*?)```")

// ParseTextCalls reads calls written as JSON in a response's text ({"name", "arguments"} or a list of
// them, optionally fenced), for servers that return tool calls as text.
func ParseTextCalls(text string) []Call {
	candidates := []string{strings.TrimSpace(text)}
	for _, m := range jsonBlockRE.FindAllStringSubmatch(text, -1) {
		candidates = append(candidates, strings.TrimSpace(m[1]))
	}
	if i, j := strings.IndexAny(text, "[{"), strings.LastIndexAny(text, "]}"); i >= 0 && j > i {
		candidates = append(candidates, text[i:j+1])
	}
	for _, c := range candidates {
		var list []Call
		if json.Unmarshal([]byte(c), &list) == nil && len(list) > 0 && list[0].Name != "" {
			return list
		}
		var one Call
		if json.Unmarshal([]byte(c), &one) == nil && one.Name != "" {
			return []Call{one}
		}
	}
	return nil
}

// ScoreFunctionCalls matches the Agent's calls against the expected ones: each expected call must be
// matched by exactly one call with its name, no argument outside the expected ones, every required
// argument present, and each value among the accepted ones (numbers by value, strings ignoring case and
// surrounding space, lists and objects element by element). Argument order never matters; call order
// matters only when ordered is set (BFCL's parallel categories are order-insensitive).
func ScoreFunctionCalls(got []Call, want []ExpectedCall, ordered bool) (float64, string) {
	score, why, _ := ScoreFunctionCallsContext(context.Background(), got, want, ordered)
	return score, why
}

// ScoreFunctionCallsContext is ScoreFunctionCalls that stops when ctx ends (its deadline or a
// cancellation), checked between two comparisons of a call with an expected call and at every step
// of the matching; it then returns ctx's error.
func ScoreFunctionCallsContext(ctx context.Context, got []Call, want []ExpectedCall, ordered bool) (float64, string, error) {
	if len(got) != len(want) {
		return 0, fmt.Sprintf("%d calls, want %d", len(got), len(want)), nil
	}
	if ordered {
		for i := range want {
			if err := ctx.Err(); err != nil {
				return 0, "", err
			}
			if why := matchCall(got[i], want[i]); why != "" {
				return 0, fmt.Sprintf("call %d: %s", i+1, why), nil
			}
		}
		return 1, "calls match", nil
	}
	// order-insensitive: a perfect matching between got and want, found as a maximum bipartite matching
	// over the n×n table of which call matches which (n² comparisons, then augmenting paths: O(n³)
	// at worst, never the n! of trying orders, so an answer cannot make the scorer search forever)
	n := len(want)
	fits := make([][]bool, n)
	var firstWhy string
	for i := range want {
		fits[i] = make([]bool, n)
		for j := range got {
			if err := ctx.Err(); err != nil {
				return 0, "", err
			}
			why := matchCall(got[j], want[i])
			fits[i][j] = why == ""
			if why != "" && firstWhy == "" {
				firstWhy = fmt.Sprintf("expected call %d: %s", i+1, why)
			}
		}
	}
	matched, err := maxMatching(ctx, fits)
	if err != nil {
		return 0, "", err
	}
	if matched < n {
		if firstWhy == "" {
			firstWhy = "no assignment of the calls matches every expected call"
		}
		return 0, firstWhy, nil
	}
	return 1, "calls match", nil
}

// maxMatching returns the size of a maximum matching of the bipartite graph fits (fits[i][j]: left i
// may pair with right j), by Kuhn's augmenting paths: O(V·E); ctx's error once ctx ends.
func maxMatching(ctx context.Context, fits [][]bool) (int, error) {
	n := len(fits)
	owner := make([]int, n) // owner[j] is the left vertex matched to right j, or -1
	for j := range owner {
		owner[j] = -1
	}
	var augment func(i int, seen []bool) bool
	augment = func(i int, seen []bool) bool {
		for j, ok := range fits[i] {
			if !ok || seen[j] {
				continue
			}
			seen[j] = true
			if owner[j] < 0 || augment(owner[j], seen) {
				owner[j] = i
				return true
			}
		}
		return false
	}
	matched := 0
	for i := range fits {
		if err := ctx.Err(); err != nil {
			return matched, err
		}
		if augment(i, make([]bool, n)) {
			matched++
		}
	}
	return matched, nil
}

func matchCall(got Call, want ExpectedCall) string {
	if got.Name != want.Name {
		return fmt.Sprintf("called %s, want %s", got.Name, want.Name)
	}
	names := make([]string, 0, len(got.Args))
	for k := range got.Args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		accepted, ok := want.Args[k]
		if !ok {
			return fmt.Sprintf("%s: unexpected argument %s", want.Name, k)
		}
		if !acceptedValue(got.Args[k], accepted) {
			b, _ := json.Marshal(got.Args[k])
			return fmt.Sprintf("%s: argument %s = %s not accepted", want.Name, k, b)
		}
	}
	for k, accepted := range want.Args {
		if _, ok := got.Args[k]; !ok && !optional(accepted) {
			return fmt.Sprintf("%s: missing argument %s", want.Name, k)
		}
	}
	return ""
}

func optional(accepted []any) bool {
	for _, a := range accepted {
		if s, ok := a.(string); ok && s == "" {
			return true
		}
	}
	return false
}

func acceptedValue(v any, accepted []any) bool {
	for _, a := range accepted {
		if s, ok := a.(string); ok && s == "" {
			continue
		}
		if sameValue(v, a) {
			return true
		}
	}
	return false
}

// sameValue compares two decoded JSON values: numbers by value, strings trimmed and case-folded.
func sameValue(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && math.Abs(fa-fb) <= 1e-9*math.Max(1, math.Abs(fb))
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && strings.EqualFold(strings.TrimSpace(x), strings.TrimSpace(y))
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !sameValue(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// ToolSchemas turns BFCL's function schemas into OpenAI tools: {"type": "function", "function": f},
// with BFCL's "dict" parameter types spelled "object" and "float" spelled "number".
func ToolSchemas(functions string) ([]json.RawMessage, error) {
	var fns []map[string]any
	if err := json.Unmarshal([]byte(functions), &fns); err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for _, f := range fns {
		fixTypes(f["parameters"])
		b, err := json.Marshal(map[string]any{"type": "function", "function": f})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func fixTypes(v any) {
	switch x := v.(type) {
	case map[string]any:
		if t, ok := x["type"].(string); ok {
			switch t {
			case "dict":
				x["type"] = "object"
			case "float":
				x["type"] = "number"
			case "tuple":
				x["type"] = "array"
			case "any":
				delete(x, "type")
			}
		}
		for _, e := range x {
			fixTypes(e)
		}
	case []any:
		for _, e := range x {
			fixTypes(e)
		}
	}
}
