package analytics

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/schemas"
)

// TestEnvOutcomesAgreeWithGo runs sql/env_outcomes.sql and internal/outcome (what the Designer's reward
// uses) on the same seed episodes, under several outcome settings, and checks that they agree row for
// row: counts, solve rates, mean outcomes and mean returns per (step, env). The seeds are
// testdata/outcome/episodes.csv (every ended_by, timeouts and env errors included) and the analytics seed.
func TestEnvOutcomesAgreeWithGo(t *testing.T) {
	seeds := map[string]string{
		"outcome":   filepath.Join("..", "..", "testdata", "outcome", "episodes.csv"),
		"analytics": filepath.Join(seedDir, "episodes.csv"),
	}
	settings := []struct{ exclude, value string }{
		{config.DefaultExcludeEndedBy, "return"},
		{"env_error", "return"},
		{"", "success"},
		{"timeout, agent_error,env_error", "success"},
	}
	ctx := context.Background()
	for seed, path := range seeds {
		episodes, err := readCSVRows[schemas.EpisodeRow](path)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range settings {
			t.Run(fmt.Sprintf("%s/exclude=%s/value=%s", seed, st.exclude, st.value), func(t *testing.T) {
				cfg := config.Default()
				cfg.Sample.Corpus = ""
				cfg.Outcome.ExcludeEndedBy, cfg.Outcome.Value = st.exclude, config.OutcomeValue(st.value)
				rules, err := outcome.FromConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				lk := episodesLake(t, cfg, episodes)
				s, err := Open(ctx, lk, "r", "")
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				got, err := s.Model(ctx, "env_outcomes")
				if err != nil {
					t.Fatal(err)
				}
				want := rules.ByStepEnv(episodes)
				if len(got.Rows) != len(want) {
					t.Fatalf("env_outcomes has %d rows, Go %d", len(got.Rows), len(want))
				}
				for i, w := range want {
					where := fmt.Sprintf("row %d (step %d, env %s)", i, w.Step, w.EnvID)
					if got.String(i, "env_id") != w.EnvID || int64(got.Float(i, "step")) != w.Step ||
						got.String(i, "skill") != w.Skill || int64(got.Float(i, "pool_step")) != w.PoolStep {
						t.Fatalf("%s: SQL has step %s env %s skill %s pool %s", where, got.String(i, "step"),
							got.String(i, "env_id"), got.String(i, "skill"), got.String(i, "pool_step"))
					}
					counts := map[string]int{"excluded": w.Excluded,
						"episodes_nohint": w.NoHint.Episodes, "counted_nohint": w.NoHint.Counted, "solved_nohint": w.NoHint.Solved,
						"episodes_hint": w.Hint.Episodes, "counted_hint": w.Hint.Counted, "solved_hint": w.Hint.Solved}
					for col, n := range counts {
						if got.Float(i, col) != float64(n) {
							t.Errorf("%s: %s = %s in SQL, %d in Go", where, col, got.String(i, col), n)
						}
					}
					for _, side := range []struct {
						name string
						s    outcome.Side
					}{{"nohint", w.NoHint}, {"hint", w.Hint}} {
						for col, x := range map[string]float64{"solve_rate_": side.s.SolveRate,
							"outcome_": side.s.MeanOutcome, "return_": side.s.MeanReturn} {
							col += side.name
							null := got.Rows[i][got.Col(col)] == nil
							switch {
							case side.s.Counted == 0 && !null:
								t.Errorf("%s: %s = %s in SQL, want NULL (no counted episode)", where, col, got.String(i, col))
							case side.s.Counted > 0 && (null || math.Abs(got.Float(i, col)-x) > 1e-12*math.Max(1, math.Abs(x))):
								t.Errorf("%s: %s = %s in SQL, %v in Go", where, col, got.String(i, col), x)
							}
						}
					}
				}
			})
		}
	}
}

// episodesLake commits episodes as run "r" of a fresh local lake, one partition per step.
func episodesLake(t *testing.T, cfg *config.Config, episodes []schemas.EpisodeRow) *lake.Lake {
	t.Helper()
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "r", cfg)
	byStep := map[int64][]schemas.EpisodeRow{}
	for _, e := range episodes {
		byStep[e.Step] = append(byStep[e.Step], e)
	}
	for step, rows := range byStep {
		key := lake.PartitionKey{Run: "r", Table: schemas.EpisodesSpec.Name, Step: step}
		laketest.Write(t, lk, key, rows)
	}
	return lk
}
