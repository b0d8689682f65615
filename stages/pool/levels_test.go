package pool_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/pool"
	"github.com/spadekit/spade/stages/stage"
)

// TestRuleObserve checks RLVE's sliding window on hand-computed cases (tau_acc 0.9, tau_num 4, width 2,
// top level 3).
func TestRuleObserve(t *testing.T) {
	rule := pool.Rule{TauAcc: 0.9, TauNum: 4, Width: 2, MaxLevel: 3}
	type play struct {
		level   int
		success bool
	}
	plays := func(level, n, successes int) []play {
		out := make([]play, n)
		for i := range out {
			out[i] = play{level, i < successes}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		start    pool.Window
		plays    []play
		want     pool.Window
		promoted int
	}{
		{"too few plays to check", pool.Window{}, plays(0, 3, 3), pool.Window{Attempts: 3, Successes: 3}, 0},
		{"4 of 4 at the top: up one, the window [0, 1]", pool.Window{}, plays(0, 4, 4), pool.Window{Low: 0, High: 1}, 1},
		{"3 of 4 is below 0.9: checked, counts reset, no move", pool.Window{}, plays(0, 4, 3), pool.Window{}, 0},
		{"plays below the top do not count", pool.Window{Low: 0, High: 1}, plays(0, 8, 8), pool.Window{Low: 0, High: 1}, 0},
		{"a second move drags the bottom up (width 2)", pool.Window{Low: 0, High: 1}, plays(1, 4, 4), pool.Window{Low: 1, High: 2}, 1},
		{"counts carry across calls", pool.Window{High: 0, Attempts: 2, Successes: 2}, plays(0, 2, 2), pool.Window{High: 1}, 1},
		{"the top level is a ceiling", pool.Window{Low: 2, High: 3}, plays(3, 8, 8), pool.Window{Low: 2, High: 3}, 0},
		{"8 plays at the top move it once, then count again", pool.Window{}, plays(0, 8, 8), pool.Window{High: 1}, 1},
	} {
		w := tc.start
		promoted := 0
		for _, p := range tc.plays {
			if rule.Observe(&w, p.level, p.success) {
				promoted++
			}
		}
		if w != tc.want || promoted != tc.promoted {
			t.Errorf("%s: window %+v after %d moves, want %+v after %d", tc.name, w, promoted, tc.want, tc.promoted)
		}
	}
	if w := (pool.Window{}); (pool.Rule{TauAcc: 0.9, TauNum: 10, Width: 4, MaxLevel: 20}).Observe(&w, 0, true) {
		t.Error("one play moved a window that needs ten")
	}
}

// rlvePool imports the RLVE environments of testdata (fakeCheck: no sandbox) as pool "rlve".
func rlvePool(t *testing.T, lk *lake.Lake, envs string) pool.Result {
	t.Helper()
	res, err := pool.Import(context.Background(), lk, pool.Spec{Name: "rlve", Setting: schemas.SettingGames, Format: schemas.PoolRLVE,
		Inputs: []string{"../../testdata/pools/rlve"}, RLVEEnvs: envs}, fakeCheck)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

var levelLine = regexp.MustCompile(`(?m)^RLVE_LEVEL = (\d+)$`)

// TestRLVELevelsFollowThePlays runs the pool stage of an RLVE pool over steps, committing made-up plays
// of each step's envs in between: with every play correct a window moves up exactly when tau_num plays
// at its top level have been counted; with none correct it never moves; each env's program is set to the
// level its row drew; a step whose previous plays are missing is refused.
func TestRLVELevelsFollowThePlays(t *testing.T) {
	ctx := context.Background()
	for _, solved := range []bool{true, false} {
		t.Run(fmt.Sprintf("solved=%v", solved), func(t *testing.T) {
			cfg, _ := config.Preset("qwen3-4b-fixed-rlve")
			cfg.Sample.RLVETauNum, cfg.Sample.RLVEWindow, cfg.Sample.RLVEMaxLevel = 6, 2, 3
			cfg.Rollout.GroupSize = 4
			lk, run := laketest.Run(t, cfg)
			if res := rlvePool(t, lk, "SumList,LargestValue"); res.Imported != 2 {
				t.Fatalf("import: %+v", res)
			}
			env, err := stage.NewEnv(ctx, lk, run, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The test's own bookkeeping of the rule, play by play: the window and the plays counted at its
			// top since the last check, by environment.
			type expect struct {
				low, high int32
				count     int64
			}
			want := map[string]*expect{"SumList": {}, "LargestValue": {}}
			moves := 0
			for step := int64(0); step < 8; step++ {
				if _, err := stage.Execute(ctx, env, pool.Stage{}, step); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				levels, err := lake.ReadRows[schemas.RLVELevelRow](ctx, lk, lake.PartitionKey{Run: run, Table: "rlve_levels", Step: step})
				if err != nil || len(levels) != 2 {
					t.Fatalf("step %d: %d level rows, %v", step, len(levels), err)
				}
				envs, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: run, Table: "envs", Step: step})
				if err != nil || len(envs) != 2 {
					t.Fatalf("step %d: %d envs, %v", step, len(envs), err)
				}
				var episodes []schemas.EpisodeRow
				for _, l := range levels {
					w := want[l.Name]
					if err := l.Validate(); err != nil || !l.Drawn || l.Low != w.low || l.High != w.high || l.Attempts != w.count {
						t.Fatalf("step %d: %+v (%v), want window [%d, %d] with %d counted plays", step, l, err, w.low, w.high, w.count)
					}
					var e schemas.EnvRow
					for _, x := range envs {
						if x.EnvID == l.EnvID {
							e = x
						}
					}
					m := levelLine.FindStringSubmatch(e.Code)
					if m == nil || m[1] != fmt.Sprint(l.Level) || !strings.Contains(e.Code, fmt.Sprintf("RLVE_PROBLEM_SEED = %d\n", l.ProblemSeed)) {
						t.Fatalf("step %d: env %s of %s (level %d) has %v", step, e.EnvID, l.Name, l.Level, m)
					}
					for i := range cfg.Rollout.GroupSize {
						ret := 0.0
						if solved {
							ret = 1
						}
						episodes = append(episodes, schemas.EpisodeRow{Step: step, PoolStep: step, EnvID: l.EnvID, EpisodeID: fmt.Sprintf("%s-%d", l.EnvID, i),
							Index: int32(i), Return: ret, Turns: 1, EndedBy: schemas.EndedDone})
						if l.Level != w.high {
							continue
						}
						if w.count++; w.count == 6 {
							if solved && w.high < 3 {
								w.high, w.low, moves = w.high+1, max(w.low, w.high), moves+1
							}
							w.count = 0
						}
					}
				}
				// A play that failed for the env's own reason is never counted.
				episodes = append(episodes, schemas.EpisodeRow{Step: step, PoolStep: step, EnvID: levels[0].EnvID, EpisodeID: "failed", Index: 9,
					Return: 1, EndedBy: schemas.EndedEnvError, Error: "boom"})
				if step == 3 {
					// The next pool step needs these plays: without them it is refused.
					if _, err := stage.Execute(ctx, env, pool.Stage{}, step+1); !errors.Is(err, stage.ErrMissingInput) || !strings.Contains(err.Error(), " rollout --step 3` first") {
						t.Fatalf("step %d without the plays of step %d: %v", step+1, step, err)
					}
				}
				laketest.Write(t, lk, lake.PartitionKey{Run: run, Table: "episodes", Step: step}, episodes)
			}
			if solved && moves < 2 {
				t.Errorf("every play correct over 8 steps moved the windows %d times", moves)
			}
			if !solved && moves != 0 {
				t.Errorf("no play correct moved the windows %d times", moves)
			}
		})
	}
}
