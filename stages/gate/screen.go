package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
)

// ScreenPrompt is the system prompt of the tools setting's LLM screen (version 1).
const ScreenPrompt = `You review tool-use environments written as Python programs before an agent trains on them.
The agent sees only the tools and the observations, never the code. The program issues its user
instructions one by one; each has a success condition checked against the backend state.
For every instruction, in the order the program issues them, decide whether some sequence of calls
to the listed tools, with valid arguments, makes its success condition true.
Answer with one line per instruction and nothing else:
N: yes
or
N: no - the reason`

// LLMScreen is the Screen backed by the screen role of an llm.Client. Its calls are recorded
// by the client (take them with Client.TakeCalls and commit them to llm_calls).
type LLMScreen struct {
	// Client makes the calls; it must have the screen role.
	Client *llm.Client
	// Step is the pool step the calls belong to.
	Step int64
}

var screenLine = regexp.MustCompile(`(?im)^[ \t]*(?:instruction[ \t]*)?(\d+)[ \t]*[:.)-][ \t]*(yes|no)\b[ \t:\-–—]*(.*)$`)

// Screen implements Screen: one chat call per program; "no" for any instruction rejects it.
func (s *LLMScreen) Screen(ctx context.Context, code string, tools json.RawMessage, instructions []string) ([]bool, string, error) {
	first := ""
	if len(instructions) > 0 {
		first = instructions[0]
	}
	user := fmt.Sprintf("Tools (OpenAI function schemas):\n%s\n\nFirst observation (seed 0):\n%s\n\nProgram:\n```python\n%s\n```", tools, first, code)
	sum := sha256.Sum256([]byte(code))
	comp, err := s.Client.Chat(ctx, llm.Request{
		Role: schemas.RoleScreen, Step: s.Step, Key: "screen/env=" + hex.EncodeToString(sum[:8]),
		Messages: []llm.Message{{Role: "system", Content: ScreenPrompt}, {Role: "user", Content: user}},
	})
	if err != nil {
		return nil, "", err
	}
	if comp.Failed() {
		return nil, "", fmt.Errorf("screen call %s failed: %s", comp.CallID, comp.Err)
	}
	return ParseScreenAnswer(comp.Text)
}

// ParseScreenAnswer reads "N: yes" / "N: no - reason" lines; the reason returned is the first
// "no"'s. An answer with no such line is an error.
func ParseScreenAnswer(text string) ([]bool, string, error) {
	matches := screenLine.FindAllStringSubmatch(text, -1)
	if len(matches) == 0 {
		return nil, "", errors.New("screen answer has no 'N: yes|no' line: " + clip(text))
	}
	verdicts := map[int]bool{}
	reasons := map[int]string{}
	most := 0
	for _, m := range matches {
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > 20 {
			continue
		}
		verdicts[n] = strings.EqualFold(m[2], "yes")
		reasons[n] = strings.TrimSpace(m[3])
		most = max(most, n)
	}
	out := make([]bool, most)
	reason := ""
	for i := range out {
		yes, ok := verdicts[i+1]
		out[i] = ok && yes
		if !out[i] && reason == "" {
			reason = reasons[i+1]
			if !ok {
				reason = "no verdict for this instruction"
			}
		}
	}
	return out, reason, nil
}
