package regret

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

func TestAnchorByHand(t *testing.T) {
	cases := []struct{ p, lo, hi, want float64 }{
		{0, .4, .6, 0}, {.2, .4, .6, .5}, {.4, .4, .6, 1}, {.5, .4, .6, 1}, {.6, .4, .6, 1},
		{.8, .4, .6, .5}, {1, .4, .6, 0}, {0, 0, .6, 1}, {1, .4, 1, 1}, {-.5, .4, .6, 0}, {1.5, .4, .6, 0},
	}
	for _, c := range cases {
		if got := outcome.DifficultyAnchor(c.p, c.lo, c.hi); !near(got, c.want) {
			t.Errorf("outcome.DifficultyAnchor(%v, %v, %v) = %v, want %v", c.p, c.lo, c.hi, got, c.want)
		}
	}
}

func TestAnchorInUnitInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		lo := rng.Float64()
		hi := lo + rng.Float64()*(1-lo)
		p := rng.Float64()*1.4 - .2
		if a := outcome.DifficultyAnchor(p, lo, hi); !(a >= 0 && a <= 1) {
			t.Fatalf("outcome.DifficultyAnchor(%v, %v, %v) = %v, outside [0, 1]", p, lo, hi, a)
		}
	}
}

func TestRewardNonDecreasingInRegret(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := testParams()
	for i := 0; i < 5000; i++ {
		solve := rng.Float64()
		anchor := outcome.DifficultyAnchor(solve, p.BandLo, p.BandHi)
		r1 := rng.Float64()*4 - 2
		r2 := r1 + rng.Float64()*2
		a := DesignerReward(ClippedRegret(r1), anchor, p.WeightRegret, p.WeightAnchor)
		b := DesignerReward(ClippedRegret(r2), anchor, p.WeightRegret, p.WeightAnchor)
		if b < a {
			t.Fatalf("solve %v: reward(regret %v) = %v > reward(regret %v) = %v", solve, r1, a, r2, b)
		}
	}
}

func TestEMAUpdateByHand(t *testing.T) {
	if got := EMAUpdate(123, .3, .1, true); got != .3 {
		t.Errorf("first observation: %v, want .3", got)
	}
	if got := EMAUpdate(.5, 1, .1, false); !near(got, .55) {
		t.Errorf("EMAUpdate(.5, 1, .1) = %v, want .55", got)
	}
	// A skill not played at a step is carried forward unchanged.
	prev := []schemas.EMAStateRow{{Step: 3, Skill: "x", MuFast: .2, MuSlow: .4, Rounds: 2, LastObserved: 3}}
	next := FoldEMA(prev, []EnvScore{{EnvID: "e", Skill: "y", RNoHint: 1, NNoHint: 1}}, 4, testParams())
	if len(next) != 2 || next[0].Skill != "x" || next[0].MuSlow != .4 || next[0].Step != 4 || next[0].LastObserved != 3 || next[1].Rounds != 1 {
		t.Fatalf("FoldEMA = %+v", next)
	}
}

func TestCenterBySkillSumsToZero(t *testing.T) {
	vals := []float64{1, 2, 3, 10, 7}
	skills := []string{"a", "a", "a", "b", "c"}
	inc := []bool{true, true, true, true, false}
	got := CenterBySkill(vals, skills, inc)
	want := []float64{-1, 0, 1, 0, 0}
	for i := range want {
		if !near(got[i], want[i]) {
			t.Fatalf("CenterBySkill = %v, want %v", got, want)
		}
	}
}

func TestMemoryFIFOProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 200; trial++ {
		capacity := rng.IntN(12)
		var memory []schemas.MemoryRow
		var all []string // every env ever pushed, oldest first
		for pool := 0; pool < 10; pool++ {
			n := rng.IntN(15)
			var entries []schemas.MemoryRow
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("p%d-e%d", pool, i)
				entries = append(entries, schemas.MemoryRow{EnvID: id})
				all = append(all, id)
			}
			before := append([]schemas.MemoryRow(nil), memory...)
			next := PushFIFO(memory, entries, capacity, int64(pool))
			if len(before) != len(memory) || (len(before) > 0 && !reflect.DeepEqual(before, memory)) {
				t.Fatalf("PushFIFO modified its input")
			}
			memory = next
			if len(memory) > capacity {
				t.Fatalf("memory has %d entries, capacity %d", len(memory), capacity)
			}
			// FIFO: the memory is exactly the newest min(capacity, pushed) envs, oldest first.
			want := all[max(0, len(all)-capacity):]
			if len(memory) != len(want) {
				t.Fatalf("memory has %d entries, want %d", len(memory), len(want))
			}
			for i, m := range memory {
				if m.EnvID != want[i] || int(m.Position) != i || m.Step != int64(pool) {
					t.Fatalf("memory[%d] = %s pos %d step %d, want %s pos %d step %d", i, m.EnvID, m.Position, m.Step, want[i], i, pool)
				}
			}
		}
	}
}

// TestMemoryAcrossPoolsThroughTheLake checks eviction across pool-end snapshots with a small capacity.
func TestMemoryAcrossPoolsThroughTheLake(t *testing.T) {
	ctx := context.Background()
	lk, run := newRun(t, func(c *config.Config) { c.Memory.Capacity = 4 })
	for step := int64(0); step < 2; step++ {
		if _, err := stage.Within(ctx, testEnv(t, lk, run, shard.All, false), stage.Regret, step, Run); err != nil {
			t.Fatal(err)
		}
	}
	mem, _ := lake.ReadRows[schemas.MemoryRow](ctx, lk, key(run, schemas.MemorySpec.Name, 1))
	var ids []string
	for _, m := range mem {
		ids = append(ids, m.EnvID)
	}
	if !reflect.DeepEqual(ids, []string{"C", "D", "E", "F"}) {
		t.Fatalf("memory after the first pool = %v, want the newest four [C D E F]", ids)
	}
}

// TestShardsCommitTheSameRows runs the stage as three shards and as one process: same rows.
func TestShardsCommitTheSameRows(t *testing.T) {
	ctx := context.Background()
	one, run := newRun(t, nil)
	three, _ := newRun(t, nil)
	for step := int64(0); step < 2; step++ {
		if _, err := stage.Within(ctx, testEnv(t, one, run, shard.All, false), stage.Regret, step, Run); err != nil {
			t.Fatal(err)
		}
		for i := 2; i >= 0; i-- {
			if _, err := stage.Within(ctx, testEnv(t, three, run, shard.Spec{Index: i, Count: 3}, false), stage.Regret, step, Run); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, table := range []string{schemas.DesignerRewardsSpec.Name, schemas.EMAStateSpec.Name, schemas.MemorySpec.Name} {
		a := readSorted(t, one, run, table)
		b := readSorted(t, three, run, table)
		if a != b {
			t.Errorf("%s: sharded rows differ:\n%s\nvs\n%s", table, a, b)
		}
	}
}

func readSorted(t *testing.T, lk *lake.Lake, run, table string) string {
	t.Helper()
	var lines []string
	switch table {
	case schemas.DesignerRewardsSpec.Name:
		rows, err := lake.ReadTable[schemas.DesignerRewardRow](context.Background(), lk, run, table)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			lines = append(lines, fmt.Sprintf("%+v", r))
		}
	case schemas.EMAStateSpec.Name:
		rows, _ := lake.ReadTable[schemas.EMAStateRow](context.Background(), lk, run, table)
		for _, r := range rows {
			lines = append(lines, fmt.Sprintf("%+v", r))
		}
	case schemas.MemorySpec.Name:
		rows, _ := lake.ReadTable[schemas.MemoryRow](context.Background(), lk, run, table)
		for _, r := range rows {
			lines = append(lines, fmt.Sprintf("%+v", r))
		}
	}
	if len(lines) == 0 {
		t.Fatalf("%s: no rows", table)
	}
	sort.Strings(lines)
	return fmt.Sprint(lines)
}

// Under memory.written_at pool_start (the presets'), the pool's envs join the memory at its first step,
// scored on that step's plays alone: the win rate is the share of counted unhinted plays with a return
// above 0 and the regret the step's hinted minus unhinted mean. By hand from testdata/regret (step 0;
// env_error plays are not counted; D has none left and is not remembered):
//
//	A  returns 1 0 0 0     win 1/4   hinted 1 1 0 1 → .75 − .25  =  .5
//	B  returns 1 1 1 .5    win 4/4   hinted 1 1 1 1 → 1 − .875   =  .125  (solve rate 3/4: success is not win)
//	C  returns .5 .5       win 2/2   no hinted play              =  0
//	E  returns .2          win 1/1   hinted −.4     → −.4 − .2   = −.6
//	F  returns 1 0 (+err)  win 1/2   hinted 1 (+err) → 1 − .5    =  .5
//
// Step 1 (the pool's end) writes no snapshot.
func TestMemoryIsWrittenAtThePoolsFirstStep(t *testing.T) {
	ctx := context.Background()
	lk, run := newRun(t, func(c *config.Config) { c.Memory.WrittenAt = config.MemoryAtPoolStart })
	res0, err := stage.Within(ctx, testEnv(t, lk, run, shard.All, false), stage.Regret, 0, Run)
	if err != nil {
		t.Fatal(err)
	}
	if !res0.MemoryWritten || res0.Memory != 5 {
		t.Fatalf("step 0: %+v, want a snapshot of 5 entries", res0)
	}
	mem, err := lake.ReadRows[schemas.MemoryRow](ctx, lk, key(run, schemas.MemorySpec.Name, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id          string
		win, regret float64
	}{{"A", .25, .5}, {"B", 1, .125}, {"C", 1, 0}, {"E", 1, -.6}, {"F", .5, .5}}
	if len(mem) != len(want) {
		t.Fatalf("memory = %+v, want %d entries", mem, len(want))
	}
	for i, w := range want {
		m := mem[i]
		if m.EnvID != w.id || !near(m.SolveRate, w.win) || !near(m.Regret, w.regret) || m.Step != 0 || m.PoolStep != 0 {
			t.Errorf("memory[%d] = %s win %.4f regret %.4f (step %d), want %s win %.4f regret %.4f", i, m.EnvID, m.SolveRate, m.Regret, m.Step, w.id, w.win, w.regret)
		}
	}
	res1, err := stage.Within(ctx, testEnv(t, lk, run, shard.All, false), stage.Regret, 1, Run)
	if err != nil {
		t.Fatal(err)
	}
	if res1.MemoryWritten {
		t.Errorf("step 1 (pool end) wrote a memory snapshot under pool_start: %+v", res1)
	}
	if _, err := lake.ReadRows[schemas.MemoryRow](ctx, lk, key(run, schemas.MemorySpec.Name, 1)); err == nil {
		t.Error("a memory partition was committed at step 1")
	}
}
