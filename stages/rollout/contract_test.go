package rollout_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// gymEnvs reads testdata/envs-gym as env rows of pool step 0, keyed by file name.
func gymEnvs(t *testing.T) map[string]schemas.EnvRow {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "envs-gym", "*.py"))
	if err != nil || len(paths) != 5 {
		t.Fatalf("testdata/envs-gym: %d programs (%v), want 5", len(paths), err)
	}
	out := map[string]schemas.EnvRow{}
	for i, path := range paths {
		code, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		hint, _ := os.ReadFile(strings.TrimSuffix(path, ".py") + ".hint")
		out[strings.TrimSuffix(filepath.Base(path), ".py")] = envRow(0, i, string(code), strings.TrimSpace(string(hint)), schemas.SkillMath, "games")
	}
	return out
}

// The rollout plays programs in the authors' contract through the stage's own sandbox settings
// (max_turns reaches the constructor): an Agent that never finds the answer ends every episode as
// env_truncated when the env's own limit comes first (each env's last turn marked truncated, a terminal
// return of 0, no success), as max_turns when rollout.max_turns comes first; an Agent that finds it
// ends the episode as done with the terminal reward.
func TestRolloutGymnasiumContract(t *testing.T) {
	envs := gymEnvs(t)
	rows := make([]schemas.EnvRow, 0, len(envs))
	for _, e := range envs {
		rows = append(rows, e)
	}
	wrong := func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: `\boxed{Z}`} }
	f := newScriptedFixture(t, "games", rows, wrong, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.MaxTurns = 1, 0, 6
		c.Rollout.Return, c.Rollout.ActionFormat = config.ReturnTerminal, config.ActionBoxed
	})
	opts := stage.SandboxOptions(f.cfg)
	opts.Python, opts.Workers, opts.CPUSeconds = os.Getenv(sandbox.PythonEnv), 4, 10
	if opts.Python == "" {
		opts.Python = "/usr/bin/python3"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := sandbox.NewPool(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	f.pool = pool

	f.rollout(t, 0)
	wantTurns := map[string]int32{"gym_vault": 4} // its own four tries; the others truncate at max_turns = 6
	byEnv := map[string]string{}
	for name, e := range envs {
		byEnv[e.EnvID] = name
	}
	episodes := readStep[schemas.EpisodeRow](t, f, "episodes", 0)
	if len(episodes) != len(envs) {
		t.Fatalf("%d episodes, want %d", len(episodes), len(envs))
	}
	for _, e := range episodes {
		name := byEnv[e.EnvID]
		want := wantTurns[name]
		if want == 0 {
			want = 6
		}
		if e.EndedBy != schemas.EndedEnvTruncated || e.Turns != want || e.Return != 0 || e.Success {
			t.Errorf("%s: ended_by %s after %d turns, return %v, success %v (%s); want env_truncated after %d turns, 0, false",
				name, e.EndedBy, e.Turns, e.Return, e.Success, e.Error, want)
		}
	}
	for _, tr := range readStep[schemas.TurnRow](t, f, "turns", 0) {
		last := tr.Turn == wantTurns[byEnv[tr.EnvID]]-1 || (wantTurns[byEnv[tr.EnvID]] == 0 && tr.Turn == 5)
		if tr.Done != last || tr.Truncated != last {
			t.Errorf("%s turn %d: done %v truncated %v", byEnv[tr.EnvID], tr.Turn, tr.Done, tr.Truncated)
		}
	}

	// rollout.max_turns below every env's own limit: spade's cap ends the plays, not the env.
	f.addRun(t, "short", rows, func(c *config.Config) { c.Rollout.MaxTurns = 3 })
	f.rolloutRun(t, "short", 0)
	for _, e := range readRun[schemas.EpisodeRow](t, f, "short", "episodes", 0) {
		if e.EndedBy != schemas.EndedMaxTurns || e.Turns != 3 {
			t.Errorf("short %s: %s after %d turns, want max_turns after 3", byEnv[e.EnvID], e.EndedBy, e.Turns)
		}
	}

	// The switch env (its reset returns a bare string) is solved by trying 1, 2, 3: done, return 1.
	switchEnv := envs["gym_bare_reset"]
	tries := func(req *llm.ChatRequestBody) llmtest.Reply {
		dark := 0
		for _, m := range req.Messages {
			dark += strings.Count(m.Content, "Dark.")
		}
		return llmtest.Reply{Text: `\boxed{` + string(rune('1'+dark)) + `}`}
	}
	g := newScriptedFixture(t, "games", []schemas.EnvRow{switchEnv}, tries, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize, c.Rollout.MaxTurns = 4, 0, 6
		c.Rollout.Return, c.Rollout.ActionFormat = config.ReturnTerminal, config.ActionBoxed
	})
	g.pool = pool
	g.rollout(t, 0)
	for _, e := range readStep[schemas.EpisodeRow](t, g, "episodes", 0) {
		if e.EndedBy != schemas.EndedDone || e.Return != 1 || !e.Success || e.Turns > 3 {
			t.Errorf("switch episode %d (seed %d): %s after %d turns, return %v, success %v (%s)", e.Index, e.Seed, e.EndedBy, e.Turns, e.Return, e.Success, e.Error)
		}
	}
}
