package gate

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/spadekit/spade/internal/config"
)

// drawnProbes is how many Agent-like actions the trivial check draws per candidate (gate.probes drawn).
const drawnProbes = 8

// probeWords are the words and commands drawn probes are made of: what Agents answer in text games,
// puzzles and quizzes. Drawn with numbers of any size and combined into commands and boxed answers,
// they make a space a program cannot enumerate to tell the gate's first actions from an Agent's.
var probeWords = []string{
	"look", "help", "yes", "no", "up", "down", "left", "right", "north", "south", "east", "west",
	"start", "next", "go", "take", "open", "use", "move", "check", "guess", "answer", "submit", "pass",
	"wait", "inventory", "a", "b", "c", "d", "true", "false", "red", "blue", "green", "key", "door",
	"push", "pull", "swap", "flip", "add", "remove", "stop", "continue", "done", "hint", "skip",
}

// trivialProbes returns the trivial check's first actions and whether they were drawn: under
// gate.probes fixed, Probes; otherwise drawnProbes Agent-like actions drawn for this candidate (from its
// GateSeed, so a re-run draws the same). The fixed probes cannot decide a verdict under drawn: an env
// that every drawn action solves is trivial whatever they give, and one that a drawn action does not
// solve is not.
func (c *checker) trivialProbes() (probes []string, drawn bool) {
	if c.opts.Probes == config.ProbesFixed {
		return Probes(c.opts.Hint), false
	}
	return DrawProbes(GateSeed(c.opts.RunSeed, c.opts.Step, c.envKey, "probes", 0), drawnProbes), true
}

// DrawProbes draws n Agent-like first actions from seed: a number (an integer of any size, a
// decimal or a negative), a word or a two-word command of probeWords, a letter choice, or either
// of those boxed (\boxed{...}) or in a short sentence. The same seed draws the same actions.
func DrawProbes(seed int64, n int) []string {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5ad3))
	number := func() string {
		switch rng.IntN(4) {
		case 0:
			return fmt.Sprint(rng.IntN(10))
		case 1:
			return fmt.Sprint(rng.IntN(1000))
		case 2:
			return fmt.Sprint(rng.Int64N(1_000_000_000) - 1000)
		}
		return fmt.Sprintf("%.*f", 1+rng.IntN(3), rng.Float64()*100)
	}
	word := func() string { return probeWords[rng.IntN(len(probeWords))] }
	out := make([]string, 0, n)
	seen := map[string]bool{}
	for len(out) < n {
		var core string
		switch rng.IntN(4) {
		case 0:
			core = number()
		case 1:
			core = word()
		case 2:
			core = word() + " " + word()
		default:
			core = word() + " " + number()
		}
		var action string
		switch rng.IntN(4) {
		case 0:
			action = `\boxed{` + core + `}`
		case 1:
			action = fmt.Sprintf("My answer is %s.", core)
		default:
			action = core
		}
		if a := strings.TrimSpace(action); !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}
