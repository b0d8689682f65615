package gate

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// gatedRegenerator answers a regeneration with its program only once the hint of another slot's
// accepted env was asked for (or gives up after a wait, which the test reports).
type gatedRegenerator struct {
	fixedRegenerator
	hinted <-chan struct{}
	late   bool
}

func (g *gatedRegenerator) Regenerate(ctx context.Context, tx *lake.Txn, prev schemas.CandidateRow, gateError string) (schemas.CandidateRow, error) {
	select {
	case <-g.hinted:
	case <-time.After(20 * time.Second):
		g.late = true
	}
	return g.fixedRegenerator.Regenerate(ctx, tx, prev, gateError)
}

// recordingHinter answers every hint and closes first at the first call.
type recordingHinter struct {
	mu    sync.Mutex
	first chan struct{}
	slots []int32
}

func (h *recordingHinter) Hint(ctx context.Context, env schemas.EnvRow) (string, []llm.Call, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.slots) == 0 {
		close(h.first)
	}
	h.slots = append(h.slots, env.Slot)
	return fmt.Sprintf("hint of slot %d", env.Slot), nil, nil
}

// TestAcceptedEnvIsHintedWhileAnotherSlotRegenerates: under generate.hint_mode separate, the hint of an
// env accepted at its first attempt is asked for while another slot is still being regenerated (the
// regeneration here waits for that hint), and every accepted env gets its hint.
func TestAcceptedEnvIsHintedWhileAnotherSlotRegenerates(t *testing.T) {
	envs := readSamples(t, repoPath("testdata", "envs"))
	bad := candidate(1, envs[1])
	bad.Code = "class Nothing:\n    pass\n"
	cands := []schemas.CandidateRow{candidate(0, envs[0]), bad}
	for i := range cands {
		cands[i].Hint = ""
	}
	lk := laketest.New(t)
	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Generate.HintMode, cfg.Gate.Checks = config.HintSeparate, config.GateStrict
	if err := cfg.Set("sandbox.python", testPython()); err != nil {
		t.Fatal(err)
	}
	laketest.NewRun(t, lk, "r1", cfg)
	laketest.Write(t, lk, lake.PartitionKey{Run: "r1", Table: schemas.CandidatesSpec.Name, Step: 0}, cands)
	hinter := &recordingHinter{first: make(chan struct{})}
	regen := &gatedRegenerator{fixedRegenerator: fixedRegenerator{code: envs[3].Code}, hinted: hinter.first}
	pool := newPool(t, sandbox.IsolationBwrap)
	env := poolEnv(t, lk, "r1", pool, shard.All)
	var logs bytes.Buffer
	env.Progress = progress.New(nil, slog.New(slog.NewTextHandler(&logs, nil)), time.Nanosecond)
	res, err := stage.Within(context.Background(), env, stage.Gate, 0, func(ctx context.Context, env *stage.Env, step int64) (Result, error) {
		return Run(ctx, env, step, Options{Regenerator: regen, Hinter: hinter})
	})
	if err != nil {
		t.Fatal(err)
	}
	// the progress line says what is in flight: checks, regenerations, hint calls and model calls
	if line := regexp.MustCompile(`\d+ accepted  \d+ checking, \d+ regenerating, \d+ hinting, \d+ calls in flight  median \S+`); !line.MatchString(logs.String()) {
		t.Fatalf("the gate's progress log names nothing in flight:\n%s", strings.TrimSpace(logs.String()))
	}
	if regen.late {
		t.Fatal("slot 1's regeneration waited 20 s for slot 0's hint: the hint is asked for only after every slot is judged")
	}
	if res.Accepted != 2 || res.Regenerated != 1 {
		t.Fatalf("result %+v, want 2 accepted, 1 regenerated", res)
	}
	if len(hinter.slots) != 2 || hinter.slots[0] != 0 {
		t.Fatalf("hints asked for slots %v, want slot 0 first, then slot 1", hinter.slots)
	}
	got, err := lake.ReadRows[schemas.EnvRow](context.Background(), lk, lake.PartitionKey{Run: "r1", Table: schemas.EnvsSpec.Name, Step: 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		if e.Hint == "" {
			t.Errorf("env %s of slot %d has no hint", e.EnvID, e.Slot)
		}
	}
}
