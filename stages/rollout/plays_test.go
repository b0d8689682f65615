package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/rollout"
	"github.com/spadekit/spade/stages/stage"
)

// More test environments for the settings of the authors' method.
const (
	// ladderEnv pays 0.5 per step and 2.0 (above the clip) when it ends at the third step.
	ladderEnv = `class Ladder:
    def reset(self, seed):
        self.n = 0
        return "Climb the ladder: answer with <action>up</action>."

    def step(self, action):
        self.n += 1
        if self.n == 3:
            return "You reached the top.", 2.0, True, {"success": True}
        return "Rung %d." % self.n, 0.5, False, {}
`
	// chattyEnv never ends and answers every move with about 100 tokens.
	chattyEnv = `class Chatty:
    def reset(self, seed):
        return "Talk to me: answer with <action>anything</action>."

    def step(self, action):
        return "Noted. " + "la " * 130, 0.0, False, {}
`
	// crashMarkerEnv is solved by any move; its observation tells the script to kill the sandbox
	// workers once, mid-episode.
	crashMarkerEnv = `class OneMove:
    def reset(self, seed):
        return "WORKER-CRASH drill: answer with <action>1</action>."

    def step(self, action):
        return "Done.", 1.0, True, {"success": True}
`
)

// addRun creates another run in the fixture's lake with the fixture's config changed by mutate and the
// given pool; its episodes are played with the fixture's client and sandbox pool.
func (f *fixture) addRun(t *testing.T, run string, envs []schemas.EnvRow, mutate func(*config.Config)) {
	t.Helper()
	cfg := *f.cfg
	mutate(&cfg)
	laketest.NewRun(t, f.lk, run, &cfg)
	laketest.Write(t, f.lk, lake.PartitionKey{Run: run, Table: "envs", Step: envs[0].PoolStep}, envs)
}

func (f *fixture) rolloutRun(t *testing.T, run string, step int64) rollout.Result {
	t.Helper()
	res, err := stage.Within(context.Background(), f.env(t, run, shard.All, true), stage.Rollout, step, rollout.Run)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func readRun[T any](t *testing.T, f *fixture, run, table string, step int64) []T {
	t.Helper()
	rows, err := lake.ReadStep[T](context.Background(), f.lk, run, table, step)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// rollout.hinted_at pool_start: group_size unhinted plays at every step, hinted_group_size hinted
// plays at the pool's first step only; paired seeds pair the first min(n, m) plays; top_k 0 is not
// sent.
func TestRolloutHintedPlaysAtPoolStartOnly(t *testing.T) {
	guess := envRow(0, 0, guessEnv, "bisect the interval", schemas.SkillMath, "games")
	f := newFixture(t, "games", []schemas.EnvRow{guess}, func(c *config.Config) {
		c.Sample.RefreshEvery = 2
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.HintedAt = 2, 3, config.HintedAtPoolStart
		c.Rollout.MaxTurns = 3
		c.LLM.Agent.TopK = 0 // the presets' is 20
	})
	for step, want := range map[int64][2]int{0: {2, 3}, 1: {2, 0}} {
		res := f.rollout(t, step)
		var count [2]int
		seeds := map[bool]map[int32]int64{false: {}, true: {}}
		for _, e := range readStep[schemas.EpisodeRow](t, f, "episodes", step) {
			h := 0
			if e.Hinted {
				h = 1
			}
			count[h]++
			seeds[e.Hinted][e.Index] = e.Seed
			if e.Index < 0 || int(e.Index) >= want[h] {
				t.Errorf("step %d: episode index %d in a group of %d", step, e.Index, want[h])
			}
		}
		if count != want || res.Episodes != want[0]+want[1] {
			t.Fatalf("step %d: %v unhinted/hinted episodes (result %d), want %v", step, count, res.Episodes, want)
		}
		for i, seed := range seeds[true] {
			if plain, ok := seeds[false][i]; ok && plain != seed {
				t.Errorf("step %d: hinted %d seed %d differs from its unhinted pair %d", step, i, seed, plain)
			}
		}
		if step == 0 && seeds[true][2] == seeds[true][0] {
			t.Error("the unpaired third hinted play repeats a seed")
		}
	}
	for _, c := range readStep[schemas.LLMCallRow](t, f, "llm_calls", 0) {
		if strings.Contains(c.Request, "top_k") {
			t.Fatalf("top_k sent with llm.agent.top_k 0: %s", c.Request)
		}
	}
}

// rollout.return: terminal scores a finished episode by its last reward clipped to [−1, 1] and an
// unfinished one 0; sum adds every reward.
func TestRolloutReturnTerminalOrSum(t *testing.T) {
	ladder := envRow(0, 0, ladderEnv, "just climb", schemas.SkillMath, "games")
	climb := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "<action>up</action>"} }
	f := newScriptedFixture(t, "games", []schemas.EnvRow{ladder}, climb, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.Return = 1, config.ReturnTerminal
	})
	for _, c := range []struct {
		run      string
		kind     config.ReturnKind
		maxTurns int
		want     float64
	}{
		{"terminal-done", config.ReturnTerminal, 6, 1},
		{"terminal-cut", config.ReturnTerminal, 2, 0},
		{"sum-done", config.ReturnSum, 6, 3},
		{"sum-cut", config.ReturnSum, 2, 1},
	} {
		f.addRun(t, c.run, []schemas.EnvRow{ladder}, func(cfg *config.Config) { cfg.Rollout.Return, cfg.Rollout.MaxTurns = c.kind, c.maxTurns })
		f.rolloutRun(t, c.run, 0)
		episodes := readRun[schemas.EpisodeRow](t, f, c.run, "episodes", 0)
		if len(episodes) != 2 {
			t.Fatalf("%s: %d episodes", c.run, len(episodes))
		}
		for _, e := range episodes {
			if e.Return != c.want {
				t.Errorf("%s: episode %s (%s after %d turns) returns %v, want %v", c.run, e.EpisodeID, e.EndedBy, e.Turns, e.Return, c.want)
			}
		}
	}
}

// boxedScript plays guessEnv in the boxed format: with "HINT:" in its first message it bisects,
// otherwise it guesses; its first unhinted answer has no boxed answer and some answers wrap the number
// in braces.
func boxedScript(req *llm.ChatRequestBody) llmtest.Reply {
	first := req.Messages[0].Content
	turn := (len(req.Messages) - 1) / 2
	if !strings.Contains(first, "HINT:") {
		if turn == 0 {
			return llmtest.Reply{Text: "I think the answer is 50."}
		}
		return llmtest.Reply{Text: fmt.Sprintf("Guessing. \\boxed{{%d}}", 1+(req.Seed>>uint(turn%8))%100)}
	}
	lo, hi := 1, 100
	for _, m := range req.Messages[1:] {
		if g := wrongRE.FindStringSubmatch(m.Content); m.Role == "user" && g != nil {
			n, _ := strconv.Atoi(g[1])
			if g[2] == "higher" {
				lo = max(lo, n+1)
			} else {
				hi = min(hi, n-1)
			}
		}
	}
	return llmtest.Reply{Text: fmt.Sprintf("Bisecting [%d, %d]: \\boxed{%d}", lo, hi, (lo+hi)/2)}
}

// The authors' Agent interface: \boxed{} answers with the v2 prompt (no system prompt, the game framed in
// the first user message), the hint appended to a hinted play's first observation, top_k sent.
func TestRolloutBoxedAnswersHintInObservationAndTopK(t *testing.T) {
	const hint = "bisect the interval"
	guess := envRow(0, 0, guessEnv, hint, schemas.SkillMath, "games")
	f := newScriptedFixture(t, "games", []schemas.EnvRow{guess}, boxedScript, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.MaxTurns = 2, 8
		c.Rollout.ActionFormat, c.Rollout.HintPlacement = config.ActionBoxed, config.HintInObservation
		c.LLM.Agent.TopK = 20
	})
	f.rollout(t, 0)
	requests := f.srv.Requests()
	hinted := 0
	for _, req := range requests {
		first := req.Messages[0]
		if first.Role != "user" || !strings.Contains(first.Content, "I picked a number") || !strings.Contains(first.Content, `\boxed{`) {
			t.Fatalf("first message %+v: want the game framed in a user message, no system prompt", first)
		}
		if strings.Contains(first.Content, "HINT:") {
			hinted++
			if !strings.Contains(first.Content, "after each guess I say higher or lower.\n\nHINT: "+hint) {
				t.Fatalf("the hint is not a blank line and HINT: after the first observation: %q", first.Content)
			}
		}
		for _, m := range req.Messages[1:] {
			if strings.Contains(m.Content, "HINT:") {
				t.Fatal("the hint appears after the first observation")
			}
		}
		if req.TopK != 20 {
			t.Fatalf("request top_k %d, want 20", req.TopK)
		}
	}
	if hinted == 0 || hinted == len(requests) {
		t.Fatalf("%d of %d requests carry the hint", hinted, len(requests))
	}
	for _, c := range readStep[schemas.LLMCallRow](t, f, "llm_calls", 0) {
		if !strings.Contains(c.Request, `"top_k":20`) {
			t.Fatalf("recorded request without top_k: %s", c.Request)
		}
	}
	var parseErrors, actions, successHinted int
	for _, tr := range readStep[schemas.TurnRow](t, f, "turns", 0) {
		if tr.ParseError != "" {
			parseErrors++
			if !strings.Contains(tr.ParseError, `\boxed`) {
				t.Fatalf("parse error %q", tr.ParseError)
			}
			continue
		}
		if _, err := strconv.Atoi(tr.Action); err != nil {
			t.Fatalf("action %q is not the boxed number", tr.Action)
		}
		actions++
	}
	for _, e := range readStep[schemas.EpisodeRow](t, f, "episodes", 0) {
		if e.Hinted && e.Success {
			successHinted++
		}
	}
	if parseErrors == 0 || actions == 0 || successHinted == 0 {
		t.Fatalf("parse errors %d, actions %d, hinted successes %d", parseErrors, actions, successHinted)
	}
	for _, req := range requests {
		for _, m := range req.Messages {
			if strings.HasPrefix(m.Content, "Your answer could not be executed") && !strings.Contains(m.Content, `\boxed{your move}`) {
				t.Fatalf("feedback %q does not ask for a boxed answer", m.Content)
			}
		}
	}
}

// rollout.context truncate keeps the whole history in every request, counts it in real tokens (the
// server's usage in chat mode, the exact sequence in tokens mode), lowers each answer's max_tokens to
// what is left of rollout.context_tokens less 64, and ends the episode (max_turns) once no more than 64
// tokens are left.
func TestRolloutTruncateEndsTheEpisode(t *testing.T) {
	const context, maxTokens = 550, 100
	for _, mode := range []config.TokenIO{config.TokenIOChat, config.TokenIOTokens} {
		t.Run(string(mode), func(t *testing.T) {
			chatty := envRow(0, 0, chattyEnv, "", schemas.SkillLogic, "games")
			talk := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "<action>hello</action>"} }
			f := newScriptedFixture(t, "games", []schemas.EnvRow{chatty}, talk, func(c *config.Config) {
				if mode == config.TokenIOTokens {
					tokenIO(c)
				}
				c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.MaxTurns = 1, 0, 12
				c.Rollout.Context = config.ContextTruncate
				c.LLM.Agent.MaxTokens = maxTokens
				c.Rollout.ContextTokens = context // the system prompt, the task and about three exchanges
			})
			f.rollout(t, 0)
			requests := f.srv.Requests()
			for i, req := range requests {
				if len(req.Messages) != 2+2*i {
					t.Fatalf("request %d has %d messages: the history was cut", i, len(req.Messages))
				}
			}
			calls := readStep[schemas.LLMCallRow](t, f, "llm_calls", 0)
			sort.Slice(calls, func(i, j int) bool { return calls[i].CallID < calls[j].CallID })
			shrunk, answers := false, 0
			for _, c := range calls {
				if c.CompletionTokens == 0 {
					continue // a /tokenize call
				}
				answers++
				var body struct {
					MaxTokens int64 `json:"max_tokens"`
				}
				if err := json.Unmarshal([]byte(c.Request), &body); err != nil || body.MaxTokens == 0 {
					t.Fatalf("call %s: request %s without max_tokens (%v)", c.CallID, c.Request, err)
				}
				// The request's max_tokens fits what was left; in tokens mode the prompt is counted
				// exactly, in chat mode all but the newest observation (estimated) is the server's count.
				slack := int64(0)
				if mode == config.TokenIOChat {
					slack = 8
				}
				if c.PromptTokens+body.MaxTokens > context-play.MinAnswerTokens+slack || body.MaxTokens > maxTokens {
					t.Errorf("call %s: %d prompt tokens and max_tokens %d overrun the context %d less %d", c.CallID, c.PromptTokens, body.MaxTokens, context, play.MinAnswerTokens)
				}
				if mode == config.TokenIOTokens && c.PromptTokens > 0 && body.MaxTokens != min(maxTokens, context-c.PromptTokens-play.MinAnswerTokens) {
					t.Errorf("call %s: max_tokens %d, want min(%d, %d − %d − %d)", c.CallID, body.MaxTokens, maxTokens, context, c.PromptTokens, play.MinAnswerTokens)
				}
				shrunk = shrunk || body.MaxTokens < maxTokens
			}
			if !shrunk {
				t.Error("no answer's max_tokens was lowered to the context left")
			}
			episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
			if len(episodes) != 1 {
				t.Fatalf("%d episodes", len(episodes))
			}
			e := episodes[0]
			if e.EndedBy != schemas.EndedMaxTurns || e.Turns < 2 || e.Turns >= 12 || int(e.Turns) != answers {
				t.Fatalf("episode ended by %s after %d turns (%d answers); want max_turns well before 12", e.EndedBy, e.Turns, answers)
			}
		})
	}
}

// An env that timed out at a step is not played at the later steps of its pool, and is played again
// in a new pool.
func TestRolloutDropsATimedOutEnvForTheRestOfItsPool(t *testing.T) {
	slow := envRow(0, 0, slowEnv, "h", schemas.SkillLogic, "games")
	guess := envRow(0, 1, guessEnv, "bisect", schemas.SkillMath, "games")
	f := newFixture(t, "games", []schemas.EnvRow{slow, guess}, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.MaxTurns = 1, 3
	})
	played := func(step int64) map[string][]schemas.EndedBy {
		out := map[string][]schemas.EndedBy{}
		for _, e := range readStep[schemas.EpisodeRow](t, f, "episodes", step) {
			out[e.EnvID] = append(out[e.EnvID], e.EndedBy)
		}
		return out
	}
	if res := f.rollout(t, 0); res.Dropped != 0 || res.Envs != 2 {
		t.Fatalf("step 0: %+v", res)
	}
	if got := played(0)[slow.EnvID]; len(got) != 2 || got[0] != schemas.EndedTimeout {
		t.Fatalf("step 0: the slow env ended %v", got)
	}
	for _, step := range []int64{1, 2} {
		res := f.rollout(t, step)
		got := played(step)
		if res.Dropped != 1 || res.Envs != 1 || len(got[slow.EnvID]) != 0 || len(got[guess.EnvID]) != 2 {
			t.Fatalf("step %d: result %+v, episodes %v", step, res, got)
		}
	}
	next := []schemas.EnvRow{envRow(4, 0, slowEnv, "h", schemas.SkillLogic, "games"), envRow(4, 1, guessEnv, "bisect", schemas.SkillMath, "games")}
	laketest.Write(t, f.lk, lake.PartitionKey{Run: f.run, Table: "envs", Step: 4}, next)
	if res := f.rollout(t, 4); res.Dropped != 0 || len(played(4)[slow.EnvID]) != 2 {
		t.Fatalf("step 4 (a new pool): %+v, episodes %v", res, played(4))
	}
}

// killSandboxWorkers kills every process under this test process (its sandbox workers, whatever runs
// inside them) with SIGKILL, as a crash or an OOM kill of the host would, and waits until they are gone.
// It returns how many it killed.
func killSandboxWorkers(t *testing.T) int {
	me := os.Getpid()
	var victims []int
	for pid, ancestors := range processAncestry(t) {
		if slices.Contains(ancestors, me) {
			victims = append(victims, pid)
		}
	}
	for _, pid := range victims {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second) // (ends as soon as they are gone)
	for _, pid := range victims {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return len(victims)
}

// processAncestry maps every process to its ancestors' pids, nearest first.
func processAncestry(t *testing.T) map[int][]int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Error(err)
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(pid); ok {
			parent[pid] = ppid
		}
	}
	out := map[int][]int{}
	for pid := range parent {
		for p, hops := parent[pid], 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			out[pid] = append(out[pid], p)
		}
	}
	return out
}

// procStat returns a process's state and parent from /proc/PID/stat.
func procStat(pid int) (state string, ppid int, ok bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	// The fields after the command (which may hold spaces) start after the last ')': state, ppid.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z"
}

// A play whose sandbox worker dies under it (not the env's doing) is played once more on a fresh worker;
// the retried play's first attempt leaves no turn or llm_calls row behind.
func TestRolloutRetriesAPlayAfterAWorkerCrash(t *testing.T) {
	env := envRow(0, 0, crashMarkerEnv, "", schemas.SkillLogic, "games")
	var once sync.Once
	killed := 0
	script := func(req *llm.ChatRequestBody) llmtest.Reply {
		if strings.Contains(req.Messages[1].Content, "WORKER-CRASH") {
			once.Do(func() { killed = killSandboxWorkers(t) })
		}
		return llmtest.Reply{Text: "<action>1</action>"}
	}
	f := newScriptedFixture(t, "games", []schemas.EnvRow{env}, script, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.MaxTurns = 2, 3
	})
	res := f.rollout(t, 0)
	if killed == 0 {
		t.Fatal("no sandbox worker was found to kill")
	}
	if res.Retried == 0 || res.Episodes != 4 {
		t.Fatalf("result %+v: want a retried play", res)
	}
	for _, e := range readStep[schemas.EpisodeRow](t, f, "episodes", 0) {
		if e.EndedBy != schemas.EndedDone || !e.Success || e.Turns != 1 || e.Error != "" {
			t.Fatalf("episode %+v: the retried play should have ended done", e)
		}
	}
	turns := readStep[schemas.TurnRow](t, f, "turns", 0)
	calls := readStep[schemas.LLMCallRow](t, f, "llm_calls", 0)
	ids := map[string]bool{}
	for _, c := range calls {
		if ids[c.CallID] {
			t.Fatalf("call %s recorded twice", c.CallID)
		}
		ids[c.CallID] = true
	}
	if len(turns) != 4 || len(calls) != len(turns) {
		t.Fatalf("%d turns and %d llm_calls rows, want 4 and 4", len(turns), len(calls))
	}
	for _, tr := range turns {
		if !ids[tr.CallID] {
			t.Fatalf("turn %s/%d has no llm_calls row", tr.EpisodeID, tr.Turn)
		}
	}
	if f.srv.Count() <= len(turns) {
		t.Fatalf("%d chat calls for %d turns: nothing was played again", f.srv.Count(), len(turns))
	}
}
