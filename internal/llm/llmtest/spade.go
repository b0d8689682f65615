package llmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/llm"
)

// Program is a sample environment program and its hint, as the scripted Designer answers them.
type Program struct {
	// Name is the file's base name without .py.
	Name string
	// Skill is the program's `# skill:` header.
	Skill string
	// Code is the program text; Hint the text of its .hint file.
	Code string
	// Hint is the privileged hint.
	Hint string
}

// LoadPrograms reads the sample programs of a directory laid out like testdata/envs (NAME.py starting
// with `# skill: …` and `# setting: …` lines, NAME.hint), keeping those of the given setting, grouped by
// skill and sorted by name.
func LoadPrograms(dir, setting string) (map[string][]Program, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.py"))
	if err != nil {
		return nil, err
	}
	out := map[string][]Program{}
	for _, f := range files {
		code, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		hint, err := os.ReadFile(strings.TrimSuffix(f, ".py") + ".hint")
		if err != nil {
			return nil, err
		}
		header := func(key string) string {
			m := regexp.MustCompile(`(?m)^# ` + key + `:\s*(\S+)`).FindStringSubmatch(string(code))
			if m == nil {
				return ""
			}
			return m[1]
		}
		if header("setting") != setting {
			continue
		}
		skill := header("skill")
		out[skill] = append(out[skill], Program{Name: strings.TrimSuffix(filepath.Base(f), ".py"), Skill: skill,
			Code: strings.TrimRight(string(code), "\n"), Hint: strings.TrimSpace(string(hint))})
	}
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("llmtest: no %s programs in %s", setting, dir)
	}
	return out, nil
}

// skillTitles are the skill names as the Designer prompts write them (stages/generate's templates).
var skillTitles = map[string]string{
	"math reasoning": "math_reasoning", "logical deduction": "logical_deduction", "spatial reasoning": "spatial_reasoning",
	"pattern recognition": "pattern_recognition", "optimization": "optimization", "causal inference": "causal_inference",
	"tool use": "tool_use",
}

// DesignerScript answers Designer prompts with the programs of the prompt's skill: the request seed
// picks one of them; a separate hint call is answered by HintScript. When brokenEvery > 0, a first attempt whose seed is divisible by it gets a program
// that fails at reset (so the gate regenerates); a regeneration prompt always gets a working program.
func DesignerScript(programs map[string][]Program, brokenEvery int64) Script {
	hint := HintScript(programs)
	return func(req *llm.ChatRequestBody) Reply {
		if reply, ok := hint(req); ok {
			return reply
		}
		prompt := req.Messages[len(req.Messages)-1].Content
		skill := "tool_use"
		for title, s := range skillTitles {
			if strings.Contains(prompt, "learning "+title) || strings.Contains(prompt, "## Skill\n"+title) {
				skill = s
			}
		}
		list := programs[skill]
		if len(list) == 0 {
			return Reply{Text: "I cannot design an environment for this skill."}
		}
		p := list[uint64(req.Seed)%uint64(len(list))]
		regenerating := strings.Contains(prompt, "previous attempt failed")
		if brokenEvery > 0 && !regenerating && req.Seed%brokenEvery == 0 {
			broken := strings.Replace(p.Code, "def reset(self, seed):", "def reset(self, seed):\n        undefined_name += 1", 1)
			return Reply{Text: "Here is the environment.\n\n```python\n" + broken + "\n```\n\n<hint>" + p.Hint + "</hint>"}
		}
		return Reply{Text: "Here is the environment.\n\n```python\n" + p.Code + "\n```\n\n<hint>" + p.Hint + "</hint>"}
	}
}

var (
	numberRE    = regexp.MustCompile(`-?\d+`)
	timesRE     = regexp.MustCompile(`what is (-?\d+) times (-?\d+)`)
	subtractRE  = regexp.MustCompile(`subtract (-?\d+) from your previous answer`)
	divideRE    = regexp.MustCompile(`integer-divide your previous answer by (-?\d+)`)
	remainderRE = regexp.MustCompile(`remainder (\d+) when divided by (\d+)`)
	sequenceRE  = regexp.MustCompile(`Sequence \d of \d: ([-\d, ]+), \.\.\.`)
	capacityRE  = regexp.MustCompile(`Capacity (\d+)`)
	itemRE      = regexp.MustCompile(`item (\d+): weight (\d+), value (\d+)`)
	cityRE      = regexp.MustCompile(`city (\d+) at \((\d+), (\d+)\)`)
	positionRE  = regexp.MustCompile(`at row (\d+), column (\d+); the goal is at row (\d+), column (\d+)\. ([a-z ,]+)\.`)
	lastActRE   = regexp.MustCompile(`(?s)<action>(.*?)</action>|\\boxed\{([^{}]*)\}`)
)

// HintScript answers the separate hint call (generate.hint_mode = separate): a request whose system
// prompt says it writes hints, and whose prompt carries one of the programs, gets that program's hint.
// ok is false for any other request.
func HintScript(programs map[string][]Program) func(req *llm.ChatRequestBody) (Reply, bool) {
	return func(req *llm.ChatRequestBody) (Reply, bool) {
		if len(req.Messages) == 0 || !strings.Contains(req.Messages[0].Content, "write hints") {
			return Reply{}, false
		}
		prompt := req.Messages[len(req.Messages)-1].Content
		for _, list := range programs {
			for _, p := range list {
				if strings.Contains(prompt, p.Code) {
					return Reply{Text: p.Hint}, true
				}
			}
		}
		return Reply{Text: "Think about the rules before you act."}, true
	}
}

// firstUser returns the conversation's first user message (the first observation), or "".
func firstUser(req *llm.ChatRequestBody) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// answerFormat wraps an action the way the conversation asks for: \boxed{...} when the first user
// message asks for a boxed answer (rollout.action_format = boxed), else <action>...</action>.
func answerFormat(req *llm.ChatRequestBody) func(string) string {
	if strings.Contains(firstUser(req), `\boxed{`) {
		return func(a string) string { return `\boxed{` + a + `}` }
	}
	return func(a string) string { return "<action>" + a + "</action>" }
}

// AgentScript plays the games of testdata/envs. With the hint (in the system prompt, or after the first
// observation as "HINT: ...") it solves the arithmetic chain, modular lock, sequences, knapsack, route and
// grid envs; without it, and on the other envs, it guesses from the request seed, and now and then (seed
// divisible by 5, first turn) answers without a marked action. It answers in the format the first user
// message asks for (\boxed{...} or <action>). So hinted episodes succeed more often, as SPADE's regret
// expects.
func AgentScript() Script {
	return func(req *llm.ChatRequestBody) Reply {
		hinted := strings.Contains(req.Messages[0].Content, "<hint>") || strings.Contains(firstUser(req), "\nHINT: ")
		obs := req.Messages[len(req.Messages)-1].Content
		turn := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				turn++
			}
		}
		act := answerFormat(req)
		if hinted {
			if action, ok := solve(req, obs); ok {
				return Reply{Text: "Using the hint.\n" + act(action)}
			}
		}
		if turn == 0 && req.Seed%5 == 0 {
			return Reply{Text: "Let me think about it. The answer is probably 7."}
		}
		guesses := []string{"up", "left", "observe", "answer chain", "RGBY", "1 2 3 4 5", "0 2", "toggle 1"}
		if numberRE.MatchString(obs) && req.Seed%2 == 0 {
			return Reply{Text: act(fmt.Sprintf("%d", 1+uint64(req.Seed)%100))}
		}
		return Reply{Text: act(guesses[uint64(req.Seed)%uint64(len(guesses))])}
	}
}

// solve returns the right action for the envs it knows, from the observation and the history.
func solve(req *llm.ChatRequestBody, obs string) (string, bool) {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	previous := func() int {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "assistant" {
				if m := lastActRE.FindAllStringSubmatch(req.Messages[i].Content, -1); m != nil {
					last := m[len(m)-1]
					return atoi(strings.TrimSpace(last[1] + last[2]))
				}
			}
		}
		return 0
	}
	floorDiv := func(a, b int) int {
		q := a / b
		if (a%b != 0) && ((a < 0) != (b < 0)) {
			q--
		}
		return q
	}
	switch {
	case timesRE.MatchString(obs):
		m := timesRE.FindStringSubmatch(obs)
		return strconv.Itoa(atoi(m[1]) * atoi(m[2])), true
	case subtractRE.MatchString(obs):
		return strconv.Itoa(previous() - atoi(subtractRE.FindStringSubmatch(obs)[1])), true
	case divideRE.MatchString(obs):
		return strconv.Itoa(floorDiv(previous(), atoi(divideRE.FindStringSubmatch(obs)[1]))), true
	}
	first := firstUser(req)
	if rs := remainderRE.FindAllStringSubmatch(first, -1); len(rs) > 0 {
		for n := 1; n <= 1000; n++ {
			ok := true
			for _, r := range rs {
				if n%atoi(r[2]) != atoi(r[1]) {
					ok = false
				}
			}
			if ok {
				return strconv.Itoa(n), true
			}
		}
	}
	if m := sequenceRE.FindStringSubmatch(obs); m != nil {
		var seq []int
		for _, f := range strings.Split(m[1], ",") {
			seq = append(seq, atoi(strings.TrimSpace(f)))
		}
		n := len(seq)
		switch {
		case n >= 3 && seq[n-1]-seq[n-2] == seq[n-2]-seq[n-3]:
			return strconv.Itoa(seq[n-1] + seq[n-1] - seq[n-2]), true
		case n >= 3 && seq[n-2] != 0 && seq[n-1]%seq[n-2] == 0 && seq[n-2]*(seq[n-1]/seq[n-2]) == seq[n-1] && seq[n-3]*(seq[n-1]/seq[n-2]) == seq[n-2]:
			return strconv.Itoa(seq[n-1] * (seq[n-1] / seq[n-2])), true
		case n >= 2:
			return strconv.Itoa(seq[n-1] + seq[n-2]), true
		}
	}
	if m := capacityRE.FindStringSubmatch(first); m != nil {
		capacity := atoi(m[1])
		items := itemRE.FindAllStringSubmatch(first, -1)
		best, bestValue := 0, -1
		for mask := 0; mask < 1<<len(items); mask++ {
			weight, value := 0, 0
			for i, it := range items {
				if mask&(1<<i) != 0 {
					weight += atoi(it[2])
					value += atoi(it[3])
				}
			}
			if weight <= capacity && value > bestValue {
				best, bestValue = mask, value
			}
		}
		var picked []string
		for i, it := range items {
			if best&(1<<i) != 0 {
				picked = append(picked, it[1])
			}
		}
		return strings.Join(picked, " "), true
	}
	if cities := cityRE.FindAllStringSubmatch(first, -1); len(cities) > 2 {
		pts := map[int][2]int{}
		var ids []int
		for _, c := range cities {
			id := atoi(c[1])
			pts[id] = [2]int{atoi(c[2]), atoi(c[3])}
			if id != 0 {
				ids = append(ids, id)
			}
		}
		dist := func(a, b int) int {
			dx, dy := pts[a][0]-pts[b][0], pts[a][1]-pts[b][1]
			return max(dx, -dx) + max(dy, -dy)
		}
		var best []int
		bestLen := 1 << 30
		var permute func(prefix, rest []int)
		permute = func(prefix, rest []int) {
			if len(rest) == 0 {
				total, at := 0, 0
				for _, c := range prefix {
					total += dist(at, c)
					at = c
				}
				total += dist(at, 0)
				if total < bestLen {
					bestLen, best = total, append([]int(nil), prefix...)
				}
				return
			}
			for i := range rest {
				next := append(append([]int(nil), rest[:i]...), rest[i+1:]...)
				permute(append(prefix, rest[i]), next)
			}
		}
		permute(nil, ids)
		out := make([]string, len(best))
		for i, c := range best {
			out[i] = strconv.Itoa(c)
		}
		return strings.Join(out, " "), true
	}
	if m := positionRE.FindStringSubmatch(obs); m != nil {
		r, c, gr, gc := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4])
		open := map[string]bool{}
		for _, part := range strings.Split(m[5], ",") {
			f := strings.Fields(part)
			if len(f) == 2 && f[1] == "open" {
				open[f[0]] = true
			}
		}
		var wanted []string
		if gr < r {
			wanted = append(wanted, "up")
		}
		if gr > r {
			wanted = append(wanted, "down")
		}
		if gc < c {
			wanted = append(wanted, "left")
		}
		if gc > c {
			wanted = append(wanted, "right")
		}
		for _, w := range wanted {
			if open[w] {
				return w, true
			}
		}
		for _, w := range []string{"up", "left", "down", "right"} {
			if open[w] {
				return w, true
			}
		}
	}
	return "", false
}
