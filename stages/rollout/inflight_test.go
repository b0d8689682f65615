package rollout_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/rollout"
	"github.com/spadekit/spade/stages/stage"
)

// TestEveryPlayOfTheStepIsInFlightAtOnce: with sandbox.workers 0 and llm.max_in_flight 0 (the presets),
// the step has a worker per env and every play's first call reaches the server before any is answered
// (the stand-in holds each first call until all 24 are in, or 20 s); the progress line names the plays
// and calls in flight and the median latency.
func TestEveryPlayOfTheStepIsInFlightAtOnce(t *testing.T) {
	const envCount, plays = 12, 2
	var mu sync.Mutex
	firsts := 0
	all := make(chan struct{})
	late := false
	script := func(req *llm.ChatRequestBody) llmtest.Reply {
		if len(req.Messages) <= 2 { // a play's first call: the system prompt and the first observation
			mu.Lock()
			firsts++
			if firsts == envCount*plays {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(20 * time.Second):
				mu.Lock()
				late = true
				mu.Unlock()
			}
		}
		return llmtest.Reply{Text: "<action>1</action>"}
	}
	var envs []schemas.EnvRow
	for i := range envCount {
		envs = append(envs, envRow(0, i, fmt.Sprintf("# env %d\n%s", i, fourStepEnv), "count", schemas.Skills[i%6], "games"))
	}
	f := newScriptedFixture(t, "games", envs, script, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize = plays, 0
		c.Sandbox.Workers, c.LLM.MaxInFlight = 0, 0
	})
	opts := stage.SandboxOptions(f.cfg)
	opts.Python = os.Getenv(sandbox.PythonEnv)
	if opts.Python == "" {
		opts.Python = "/usr/bin/python3"
	}
	opts.Workers = 1 // the pool starts with one worker; the step raises it
	pool, err := sandbox.NewPool(context.Background(), opts)
	if err != nil {
		t.Fatalf("sandbox pool: %v", err)
	}
	t.Cleanup(func() { pool.Close() })
	f.pool = pool
	env := f.env(t, f.run, shard.All, true)
	var logs bytes.Buffer
	env.Progress = progress.New(nil, slog.New(slog.NewTextHandler(&logs, nil)), time.Nanosecond)
	res, err := stage.Within(context.Background(), env, stage.Rollout, 0, rollout.Run)
	if err != nil {
		t.Fatal(err)
	}
	if firsts != envCount*plays {
		t.Fatalf("%d first calls seen, want %d", firsts, envCount*plays)
	}
	if late {
		t.Fatalf("the plays' first calls did not all reach the server together (%d of %d within 20 s)", firsts, envCount*plays)
	}
	if res.Workers != envCount || res.PeakPlays != envCount*plays || res.Turns != envCount*plays*4 {
		t.Fatalf("workers %d, plays in flight at most %d, turns %d; want %d, %d, %d", res.Workers, res.PeakPlays, res.Turns, envCount, envCount*plays, envCount*plays*4)
	}
	line := regexp.MustCompile(`\d+ plays, \d+ calls in flight  median \S+`)
	if !line.MatchString(logs.String()) {
		t.Fatalf("progress log names no plays and calls in flight and median latency:\n%s", strings.TrimSpace(logs.String()))
	}
}
