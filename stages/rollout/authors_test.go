package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// useRunPool gives f a sandbox pool made from its run's own settings (stage.SandboxOptions: the turn
// budget reaches the env's construction as in a real step), with four workers.
func useRunPool(t *testing.T, f *fixture) {
	t.Helper()
	opts := stage.SandboxOptions(f.cfg)
	opts.Python, opts.Workers, opts.FollowStep = os.Getenv(sandbox.PythonEnv), 4, false
	if opts.Python == "" {
		opts.Python = "/usr/bin/python3"
	}
	pool, err := sandbox.NewPool(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	f.pool = pool
}

// authorsPlays sets the play contract of the presets on a legacy fixture's config: each env paced by its
// own max_turns (capped), "\boxed{…}" passed to step, a raising step scored −1, the terminal return, one
// unhinted play per env and no hinted ones.
func authorsPlays(maxTurns int) func(*config.Config) {
	return func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.MaxTurns = 1, 0, maxTurns
		c.Rollout.ActionFormat, c.Rollout.Return = config.ActionBoxed, config.ReturnTerminal
		c.Rollout.TurnBudget, c.Rollout.ActionPassing, c.Rollout.EnvError = config.TurnBudgetOwn, config.ActionPassBoxed, config.EnvErrorScore
		c.Rollout.InstanceWarmup = config.WarmupValidation
	}
}

// TestPresetsPlayTheAuthorsContract checks that every preset plays as the authors' wrapper: own turn
// budget, boxed action passing, a raising step scored.
func TestPresetsPlayTheAuthorsContract(t *testing.T) {
	for _, name := range config.PresetNames() {
		c, err := config.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Rollout.TurnBudget != config.TurnBudgetOwn || c.Rollout.ActionPassing != config.ActionPassBoxed ||
			c.Rollout.EnvError != config.EnvErrorScore || c.Rollout.InstanceWarmup != config.WarmupValidation {
			t.Errorf("%s: turn_budget %s, action_passing %s, env_error %s, instance_warmup %s; want own, boxed, score, validation", name,
				c.Rollout.TurnBudget, c.Rollout.ActionPassing, c.Rollout.EnvError, c.Rollout.InstanceWarmup)
		}
	}
}

// budgetEnv ends an episode itself (truncated) once its own max_turns steps are played, as the contract's
// example does; %s is the class's max_turns handling.
const budgetEnv = `class %sEnv:
%s
    def reset(self, seed=None):
        self.n = 0
        return "Say anything.", {}

    def step(self, action):
        self.n += 1
        limit = getattr(self, "max_turns", None)
        if limit is not None and self.n >= limit:
            return "out of turns", 0.0, False, True, {}
        return "again", 0.0, False, False, {}
`

// The turn budget is min(the class's own max_turns, rollout.max_turns) under turn_budget own: a class of
// 12 turns plays 12 (truncated by itself), one of 40 plays 25, one that must be given max_turns plays 25,
// one with no max_turns at all runs to rollout.max_turns; under fixed every class is given 25.
func TestTurnBudgetIsTheClassesOwnCapped(t *testing.T) {
	classes := map[string]string{
		"Twelve":   "    def __init__(self, max_turns=12):\n        self.max_turns = max_turns\n",
		"Forty":    "    def __init__(self, max_turns=40):\n        self.max_turns = max_turns\n",
		"Required": "    def __init__(self, max_turns):\n        self.max_turns = max_turns\n",
		"Unpaced":  "    pass\n",
	}
	names := make([]string, 0, len(classes))
	for name := range classes {
		names = append(names, name)
	}
	sort.Strings(names)
	var envs []schemas.EnvRow
	byID := map[string]string{}
	for i, name := range names {
		e := envRow(0, i, fmt.Sprintf(budgetEnv, name, classes[name]), "h", schemas.SkillLogic, "games")
		envs = append(envs, e)
		byID[e.EnvID] = name
	}
	never := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: `\boxed{pass}`} }
	type ending struct {
		turns int32
		by    schemas.EndedBy
	}
	for _, c := range []struct {
		budget config.TurnBudget
		want   map[string]ending
	}{
		{config.TurnBudgetOwn, map[string]ending{"Twelve": {12, schemas.EndedEnvTruncated}, "Forty": {25, schemas.EndedEnvTruncated},
			"Required": {25, schemas.EndedEnvTruncated}, "Unpaced": {25, schemas.EndedMaxTurns}}},
		{config.TurnBudgetFixed, map[string]ending{"Twelve": {25, schemas.EndedEnvTruncated}, "Forty": {25, schemas.EndedEnvTruncated},
			"Required": {25, schemas.EndedEnvTruncated}, "Unpaced": {25, schemas.EndedMaxTurns}}},
	} {
		t.Run(string(c.budget), func(t *testing.T) {
			f := newScriptedFixture(t, "games", envs, never, func(cfg *config.Config) {
				authorsPlays(25)(cfg)
				cfg.Rollout.TurnBudget = c.budget
			})
			useRunPool(t, f)
			f.rollout(t, 0)
			for _, e := range readStep[schemas.EpisodeRow](t, f, "episodes", 0) {
				name := byID[e.EnvID]
				if got := (ending{e.Turns, e.EndedBy}); got != c.want[name] {
					t.Errorf("%s: %d turns, ended %s (%s); want %d, %s", name, e.Turns, e.EndedBy, e.Error, c.want[name].turns, c.want[name].by)
				}
			}
		})
	}
}

// echoEnv reports the exact action its step received in the next observation and in info.
const echoEnv = `class EchoEnv:
    def __init__(self, max_turns=12):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = 0
        return "Echo.", {}

    def step(self, action):
        self.n += 1
        return "got " + repr(action), 0.0, False, False, {"action": action}
`

// A games env's step receives "\boxed{CONTENT}" for a boxed answer and the answer itself, trimmed, for
// one without a box, and steps either way: the env reads the command itself.
func TestEnvReceivesTheBoxedAction(t *testing.T) {
	answers := []string{
		`I go \boxed{north}`,
		`\boxed{1} or \boxed{2}`,
		`\boxed{\frac{1}{2}}`,
		"no move at all  ",
		"<think>maybe \\boxed{3}</think> so \\boxed{4}",
		`\boxed{{A}}`,
	}
	script := func(req *llm.ChatRequestBody) llmtest.Reply {
		return llmtest.Reply{Text: answers[min((len(req.Messages)-1)/2, len(answers)-1)]}
	}
	f := newScriptedFixture(t, "games", []schemas.EnvRow{envRow(0, 0, echoEnv, "h", schemas.SkillLogic, "games")}, script, authorsPlays(len(answers)))
	useRunPool(t, f)
	f.rollout(t, 0)
	for _, req := range f.srv.Requests() {
		if first := req.Messages[0].Content; !strings.Contains(first, "If you write several, the first is played.") || strings.Contains(first, "Only the last") {
			t.Fatalf("the prompt does not say which box is played: %q", first)
		}
	}
	want := []string{`\boxed{north}`, `\boxed{1}`, `\boxed{\frac{1}{2}}`, "no move at all", `\boxed{4}`, `\boxed{A}`}
	turns := readStep[schemas.TurnRow](t, f, "turns", 0)
	if len(turns) != len(want) {
		t.Fatalf("%d turns, want %d", len(turns), len(want))
	}
	sort.Slice(turns, func(i, j int) bool { return turns[i].Turn < turns[j].Turn })
	for i, tr := range turns {
		var info struct {
			Action string `json:"action"`
		}
		if err := json.Unmarshal([]byte(tr.Info), &info); err != nil {
			t.Fatalf("turn %d info %q: %v", i, tr.Info, err)
		}
		if tr.ParseError != "" || tr.Action != want[i] || info.Action != want[i] {
			t.Errorf("turn %d: recorded %q, env received %q (parse error %q); want %q", i, tr.Action, info.Action, tr.ParseError, want[i])
		}
	}
}

// raisingEnv raises at its second step when the move has a 7 (never in the validation before a play); fourTupleEnv answers with the old 4-tuple.
const (
	raisingEnv = `class RaisesEnv:
    def __init__(self, max_turns=12):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = 0
        return "Count.", {}

    def step(self, action):
        self.n += 1
        if self.n == 2 and "7" in action:
            raise ValueError("bad move %r" % action)
        return "one", 0.5, False, False, {}
`
	fourTupleEnv = `class OldShapeEnv:
    def reset(self, seed=None):
        return "Old.", {}

    def step(self, action):
        return "old", 1.0, True, {}
`
)

// An exception in step ends the play as a lost game under env_error score: the raising turn has reward
// −1 and is done, the episode ends done with return −1 (the terminal return of a terminated episode),
// unsolved, and it is a play like any other; a step returning the old 4-tuple is a malformed return and
// scores the same at its first step. Under drop the raising play ends as env_error with return 0, and the
// old 4-tuple is read as (observation, reward, done, info).
func TestRaisingStepScoresMinusOne(t *testing.T) {
	raising := envRow(0, 0, raisingEnv, "h", schemas.SkillLogic, "games")
	old := envRow(0, 1, fourTupleEnv, "h", schemas.SkillLogic, "games")
	answer := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: `\boxed{7}`} }
	type outcome struct {
		by      schemas.EndedBy
		ret     float64
		success bool
		turns   int32
		last    float64 // the reward of the play's last turn
		failed  bool    // an error is recorded
	}
	for _, c := range []struct {
		policy       config.EnvErrorPolicy
		raising, old outcome
	}{
		{config.EnvErrorScore, outcome{schemas.EndedDone, -1, false, 2, -1, true}, outcome{schemas.EndedDone, -1, false, 1, -1, true}},
		{config.EnvErrorDrop, outcome{schemas.EndedEnvError, 0, false, 2, 0, true}, outcome{schemas.EndedDone, 1, true, 1, 1, false}},
	} {
		t.Run(string(c.policy), func(t *testing.T) {
			f := newScriptedFixture(t, "games", []schemas.EnvRow{raising, old}, answer, func(cfg *config.Config) {
				authorsPlays(25)(cfg)
				cfg.Rollout.GroupSize, cfg.Rollout.EnvError = 3, c.policy
			})
			f.rollout(t, 0)
			episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
			if len(episodes) != 6 {
				t.Fatalf("%d episodes, want 6 (every play recorded)", len(episodes))
			}
			lastTurn := map[string]int32{}
			for _, e := range episodes {
				want := c.raising
				if e.EnvID == old.EnvID {
					want = c.old
				}
				lastTurn[e.EpisodeID] = e.Turns - 1
				if e.EndedBy != want.by || e.Return != want.ret || e.Success != want.success || e.Turns != want.turns || (e.Error != "") != want.failed {
					t.Errorf("env %s: ended %s, return %v, success %v, %d turns, error %q; want %+v", e.EnvID, e.EndedBy, e.Return, e.Success, e.Turns, e.Error, want)
				}
				if e.EnvID == raising.EnvID && !strings.Contains(e.Error, "bad move") {
					t.Errorf("error %q does not carry the exception", e.Error)
				}
			}
			for _, tr := range readStep[schemas.TurnRow](t, f, "turns", 0) {
				want := c.raising
				if tr.EnvID == old.EnvID {
					want = c.old
				}
				if tr.Turn == lastTurn[tr.EpisodeID] && (tr.Reward != want.last || !tr.Done) {
					t.Errorf("env %s turn %d: reward %v, done %v; want %v, done", tr.EnvID, tr.Turn, tr.Reward, tr.Done, want.last)
				}
				if tr.EnvID == raising.EnvID && tr.Turn == 0 && tr.Reward != 0.5 {
					t.Errorf("first turn reward %v, want 0.5", tr.Reward)
				}
			}
		})
	}
	if play.EnvErrorReward != -1 {
		t.Fatalf("EnvErrorReward %v, want −1", play.EnvErrorReward)
	}
}

// stickyEnv counts its steps in __init__ only, so a reset does not clear the count.
const stickyEnv = `class StickyEnv:
    def __init__(self, max_turns=12):
        self.max_turns = max_turns
        self.calls = 0

    def reset(self, seed=None):
        return "Step.", {}

    def step(self, action):
        self.calls += 1
        return "call %d" % self.calls, 0.0, False, False, {"calls": self.calls}
`

// Under instance_warmup validation a play runs on the instance the authors' validation stepped: a program
// that keeps state across resets starts its play after the validation's three steps, its first step
// being its fourth; under none the play's first step is its first.
func TestPlayStartsWhereTheValidationLeftTheInstance(t *testing.T) {
	answer := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: `\boxed{go}`} }
	for _, c := range []struct {
		warmup config.InstanceWarmup
		first  string
	}{{config.WarmupValidation, `{"calls":4}`}, {config.WarmupNone, `{"calls":1}`}} {
		t.Run(string(c.warmup), func(t *testing.T) {
			f := newScriptedFixture(t, "games", []schemas.EnvRow{envRow(0, 0, stickyEnv, "h", schemas.SkillLogic, "games")}, answer, func(cfg *config.Config) {
				authorsPlays(2)(cfg)
				cfg.Rollout.InstanceWarmup = c.warmup
			})
			f.rollout(t, 0)
			for _, tr := range readStep[schemas.TurnRow](t, f, "turns", 0) {
				if tr.Turn == 0 && strings.ReplaceAll(tr.Info, " ", "") != c.first {
					t.Errorf("first step's info %s, want %s", tr.Info, c.first)
				}
			}
		})
	}
}

// Under rollout.play_retry failed (the presets') a play whose model call failed after the client's
// retries (agent_error) is played once more, and only its second attempt is kept: the episode ends as the
// second attempt did, its turns are the second attempt's, and the first attempt's failed turn is not in
// the lake. Under worker_death the play stays an agent_error.
func TestFailedPlayIsPlayedOnceMore(t *testing.T) {
	for _, retry := range config.PlayRetryValues() {
		t.Run(string(retry), func(t *testing.T) {
			var mu sync.Mutex
			requests := 0
			// The fixture's client tries a call 3 times: the first 3 requests fail, so the first attempt's
			// first call fails for good; every later request answers.
			script := func(*llm.ChatRequestBody) llmtest.Reply {
				mu.Lock()
				defer mu.Unlock()
				requests++
				if requests <= 3 {
					return llmtest.Reply{Status: 500}
				}
				return llmtest.Reply{Text: `\boxed{go}`}
			}
			f := newScriptedFixture(t, "games", []schemas.EnvRow{envRow(0, 0, echoEnv, "h", schemas.SkillLogic, "games")}, script, func(c *config.Config) {
				authorsPlays(2)(c)
				c.Rollout.PlayRetry = retry
			})
			useRunPool(t, f)
			res := f.rollout(t, 0)
			episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
			turns := readStep[schemas.TurnRow](t, f, "turns", 0)
			if len(episodes) != 1 {
				t.Fatalf("%d episodes, want 1", len(episodes))
			}
			e := episodes[0]
			switch retry {
			case config.RetryFailed:
				if e.EndedBy == schemas.EndedAgentError || res.Retried != 1 || e.Turns != 2 || len(turns) != 2 {
					t.Errorf("ended %s (%s) after %d turns, %d turn rows, %d retried; want the second attempt's 2 turns, 1 retried", e.EndedBy, e.Error, e.Turns, len(turns), res.Retried)
				}
				for _, tr := range turns {
					if tr.Action != `\boxed{go}` {
						t.Errorf("turn %d played %q, want the second attempt's move", tr.Turn, tr.Action)
					}
				}
			case config.RetryWorkerDeath:
				if e.EndedBy != schemas.EndedAgentError || res.Retried != 0 {
					t.Errorf("ended %s, %d retried; want agent_error, none", e.EndedBy, res.Retried)
				}
			}
		})
	}
}

// An env whose hint is empty (the hint writer gave nothing after its attempts) gets no hinted play under
// rollout.empty_hint skip (the presets'), so its regret is 0; under play its hinted plays run with the
// empty hint.
func TestEnvWithoutAHintGetsNoHintedPlays(t *testing.T) {
	envs := []schemas.EnvRow{envRow(0, 0, echoEnv, "Say go.", schemas.SkillLogic, "games"),
		envRow(0, 1, strings.Replace(echoEnv, "EchoEnv", "QuietEnv", 1), "", schemas.SkillLogic, "games")}
	answer := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: `\boxed{go}`} }
	for _, c := range []struct {
		mode  config.EmptyHint
		quiet int
	}{{config.EmptyHintSkip, 0}, {config.EmptyHintPlay, 2}} {
		t.Run(string(c.mode), func(t *testing.T) {
			f := newScriptedFixture(t, "games", envs, answer, func(cfg *config.Config) {
				authorsPlays(1)(cfg)
				cfg.Rollout.HintedGroupSize, cfg.Rollout.HintedAt, cfg.Rollout.EmptyHint = 2, config.HintedAtPoolStart, c.mode
			})
			useRunPool(t, f)
			f.rollout(t, 0)
			hinted := map[string]int{}
			for _, e := range readStep[schemas.EpisodeRow](t, f, "episodes", 0) {
				if e.Hinted {
					hinted[e.EnvID]++
				}
			}
			if hinted[envs[0].EnvID] != 2 || hinted[envs[1].EnvID] != c.quiet {
				t.Errorf("hinted plays: %d for the env with a hint, %d for the one without; want 2 and %d", hinted[envs[0].EnvID], hinted[envs[1].EnvID], c.quiet)
			}
		})
	}
}
