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

// ValidatorPrompt is the system prompt of the validator screen (gate.tools_checks authors): the
// question the authors' LLM validator asks of a tool-use program, in our words.
const ValidatorPrompt = `You check tool-use environments written as Python programs before an agent trains on them.
An agent plays one by calling the program's tools turn after turn and finally submits
<answer>done</answer>; it wins only when every step's success check holds. Your only question is
whether winning is possible at all: some sequence of tool calls must make every success check true.

Go through the success checks one by one (the conditions in self._message_criteria, and whatever
_advance_if_done, _check_answer or the reward and termination logic test). For each, name the state it
needs and the tool method that writes that state. A program is impossible when a check needs a state
that no tool ever writes, when a check compares values of types that can never be equal, when the only
tool that writes the state can never succeed, when two checks contradict each other, when a check needs
an exact value that neither the instruction states nor any tool result shows, or when most checks
already hold on the state reset builds. A value drawn at random is fine as long as some tool returns it
and it stays the same between calls.

Hard is fine: hidden values the agent must look up, long sequences, distracting tools. Ignore wording
and formatting. End with \boxed{yes} when every check can be reached, \boxed{no} when one cannot.`

// ValidatorScreen is the Screen of gate.tools_checks authors, the authors' LLM validator: one call of
// the screen role per program, reading the code alone (ValidatorPrompt). The first \boxed{...} on one
// line of the answer decides: yes, y or true (any case) accepts, anything else refuses; an answer
// without a box, an empty answer and a failed call accept, as theirs do. Its calls are recorded by
// the client.
type ValidatorScreen struct {
	// Client makes the calls; it must have the screen role.
	Client *llm.Client
	// Step is the pool step the calls belong to.
	Step int64
}

var validatorVerdict = regexp.MustCompile(`\\boxed\{(.+?)\}`)

// Screen implements Screen: one verdict for the whole program, and the answer's head as the reason.
func (s *ValidatorScreen) Screen(ctx context.Context, code string, _ json.RawMessage, _ []string) ([]bool, string, error) {
	sum := sha256.Sum256([]byte(code))
	comp, err := s.Client.Chat(ctx, llm.Request{
		Role: schemas.RoleScreen, Step: s.Step, Key: "screen/env=" + hex.EncodeToString(sum[:8]),
		Messages: []llm.Message{{Role: "system", Content: ValidatorPrompt},
			{Role: "user", Content: fmt.Sprintf("Can this environment be won?\n\n```python\n%s\n```", code)}},
	})
	if err != nil {
		return nil, "", err
	}
	if comp.Failed() {
		return []bool{true}, "", nil
	}
	ok, reason := ValidatorVerdict(comp.Text)
	return []bool{ok}, reason, nil
}

// ValidatorVerdict reads a validator answer: whether it accepts the program, and the answer's first 200
// characters (one line) as the reason when it refuses.
func ValidatorVerdict(text string) (bool, string) {
	m := validatorVerdict.FindStringSubmatch(text)
	if strings.TrimSpace(text) == "" || m == nil {
		return true, ""
	}
	switch strings.ToLower(strings.TrimSpace(m[1])) {
	case "yes", "y", "true":
		return true, ""
	}
	reason := []rune(strings.Join(strings.Fields(text), " "))
	if len(reason) > 200 {
		reason = reason[:200]
	}
	return false, string(reason)
}
