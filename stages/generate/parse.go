package generate

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/spadekit/spade/internal/llm"
)

// Parse errors name what is wrong with a Designer response; they are stored in candidates.parse_error.
var (
	// ErrNoCode: the response holds no fenced code block.
	ErrNoCode = errors.New("no fenced Python code block")
	// ErrTruncated: a code fence or the hint was opened and never closed (often finish_reason=length).
	ErrTruncated = errors.New("response truncated")
	// ErrNoHint: no <hint>…</hint>, or an empty one.
	ErrNoHint = errors.New("no <hint>…</hint>")
	// ErrNotEnv: the code defines no class with reset() and step() (a ToolUseBaseEnv subclass has step).
	ErrNotEnv = errors.New("code defines no class with reset() and step()")
)

var (
	fenceRE = regexp.MustCompile("(?m)^[ \t]*(```+|~~~+)[ \t]*([A-Za-z0-9_+-]*)[^\n]*$")
	hintRE  = regexp.MustCompile(`(?is)<hint>(.*?)</hint>`)
	classRE = regexp.MustCompile(`(?m)^class\s+\w+`)
	resetRE = regexp.MustCompile(`(?m)^\s+def\s+reset\s*\(`)
	stepRE  = regexp.MustCompile(`(?m)^\s+def\s+step\s*\(`)
	// toolBaseRE is a class deriving from the tools contract's base class, which gives it step().
	toolBaseRE = regexp.MustCompile(`(?m)^class\s+\w+\s*\(\s*ToolUseBaseEnv\s*\)`)
)

// definesEnv reports whether code defines an env class: a class, a reset() and a step() (its own, or
// the ToolUseBaseEnv base class's).
func definesEnv(code string) bool {
	return classRE.MatchString(code) && resetRE.MatchString(code) && (stepRE.MatchString(code) || toolBaseRE.MatchString(code))
}

// Designer is a parsed Designer response.
type Designer struct {
	// Code is the environment program.
	Code string
	// Hint is the privileged hint.
	Hint string
}

// ParseDesigner extracts the program and the hint from a Designer response. It tolerates the usual
// deviations: a think part (removed first by llm.StripThink; a <think> never closed is ErrTruncated),
// prose around the parts, a fence without a language tag or with ~~~, the
// hint before the code, several code blocks (the one defining a class with reset and step, or a
// ToolUseBaseEnv subclass with reset, wins, else the
// longest). It rejects, with the reasons above: no code, a fence or hint left open (truncated), no hint
// or an empty one, and code without an environment class. finishReason "length" turns a missing closing
// part into ErrTruncated.
func ParseDesigner(text, finishReason string) (Designer, error) {
	return parse(text, finishReason, true)
}

// ParseProgram extracts the program from a Designer response that was asked for no hint
// (generate.hint_mode = separate): ParseDesigner's rules without the hint's, and any <hint> the
// model wrote anyway is ignored (the hint writer supplies the env's hint after the gate).
func ParseProgram(text, finishReason string) (Designer, error) {
	d, err := parse(text, finishReason, false)
	d.Hint = ""
	return d, err
}

// ParseHint returns the hint from the hint writer's answer: the text without its think part
// (llm.StripThink), trimmed; when the model wrapped it in a JSON object with a "hint" field anyway, that
// field. An empty hint is an error, and so is a <think> never closed (ErrTruncated): a cut-off reasoning
// is never stored as a hint.
func ParseHint(text string) (string, error) {
	text, err := llm.StripThink(text)
	if err != nil {
		return "", errors.Join(ErrTruncated, err)
	}
	text = strings.TrimSpace(text)
	if blocks, _ := fencedBlocks(text); len(blocks) == 1 && strings.HasPrefix(text, "```") {
		var obj struct {
			Hint string `json:"hint"`
		}
		if json.Unmarshal([]byte(blocks[0]), &obj) == nil && strings.TrimSpace(obj.Hint) != "" {
			text = obj.Hint
		}
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return "", errors.New("the hint writer's answer is empty")
	}
	return text, nil
}

func parse(text, finishReason string, wantHint bool) (Designer, error) {
	text, err := llm.StripThink(text)
	if err != nil {
		return Designer{}, errors.Join(ErrTruncated, err)
	}
	blocks, open := fencedBlocks(text)
	hints := hintRE.FindAllStringSubmatch(text, -1)
	if len(blocks) == 0 {
		if open || finishReason == "length" {
			return Designer{}, errors.Join(ErrTruncated, errors.New("code fence never closed"))
		}
		return Designer{}, ErrNoCode
	}
	code := pickCode(blocks)
	if !definesEnv(code) {
		if open {
			return Designer{}, errors.Join(ErrTruncated, errors.New("code fence never closed"))
		}
		return Designer{}, ErrNotEnv
	}
	if !wantHint {
		return Designer{Code: code}, nil
	}
	if len(hints) == 0 {
		lower := strings.ToLower(text)
		if strings.Contains(lower, "<hint>") || finishReason == "length" {
			return Designer{}, errors.Join(ErrTruncated, errors.New("hint never closed"))
		}
		return Designer{}, ErrNoHint
	}
	hint := strings.TrimSpace(hints[len(hints)-1][1])
	if hint == "" {
		return Designer{}, errors.Join(ErrNoHint, errors.New("the hint is empty"))
	}
	return Designer{Code: code, Hint: hint}, nil
}

// fencedBlocks returns the bodies of closed fenced blocks and whether a fence was left open.
func fencedBlocks(text string) (blocks []string, open bool) {
	locs := fenceRE.FindAllStringSubmatchIndex(text, -1)
	for i := 0; i < len(locs); i++ {
		start := locs[i]
		marker := text[start[2]:start[3]]
		closed := false
		for j := i + 1; j < len(locs); j++ {
			end := locs[j]
			// A closing fence has the same character, at least as long, and no language tag.
			m := text[end[2]:end[3]]
			if m[0] == marker[0] && len(m) >= len(marker) && end[4] == end[5] {
				body := text[start[1]:end[0]]
				blocks = append(blocks, strings.Trim(body, "\n"))
				i = j
				closed = true
				break
			}
		}
		if !closed {
			return blocks, true
		}
	}
	return blocks, false
}

// pickCode prefers the block that defines an environment class, then the longest.
func pickCode(blocks []string) string {
	best, bestScore := "", -1
	for _, b := range blocks {
		score := len(b)
		if definesEnv(b) {
			score += 1 << 30
		}
		if score > bestScore {
			best, bestScore = b, score
		}
	}
	return best
}
