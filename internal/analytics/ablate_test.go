package analytics

import (
	"context"
	"math"
	"testing"

	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/synth"
	"github.com/spadekit/spade/schemas"
)

func TestCalibratedVendi(t *testing.T) {
	// 6 orthonormal rows, subsets of 3: every subset is orthonormal, Vendi/n = 1, distance 1, no spread.
	d := 6
	x := make([]float64, 6*d)
	for i := 0; i < 6; i++ {
		x[i*d+i] = 1
	}
	c, err := CalibratedVendi(x, 6, d, 3, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.N != 3 || c.Draws != 10 || math.Abs(c.VendiPerN-1) > 1e-9 || c.VendiPerNStd > 1e-9 || math.Abs(c.MeanDistance-1) > 1e-12 {
		t.Errorf("orthonormal: %+v", c)
	}
	// n ≥ total: one draw over every row.
	c, _ = CalibratedVendi(x, 6, d, 0, 10, 1)
	if c.N != 6 || c.Draws != 1 {
		t.Errorf("n=0: %+v, want n=6, one draw", c)
	}
	// Mixed rows: subsets differ, so the spread is positive, and equal seeds give equal results.
	y := []float64{1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 1, -1}
	a, _ := CalibratedVendi(y, 6, 2, 3, 8, 42)
	b, _ := CalibratedVendi(y, 6, 2, 3, 8, 42)
	if a != b || a.VendiPerNStd == 0 {
		t.Errorf("seeded draws: %+v vs %+v (want equal, with spread)", a, b)
	}
}

// Table 8's calibration at its scale: a batch of 24 copies of one env scores Vendi 1 (Vendi/n = 1/24),
// 24 orthogonal envs score 24 (Vendi/n = 1), whether the batch is the whole set or drawn from a larger one.
func TestBatchVendiCalibration(t *testing.T) {
	const n, d = DefaultBatch, 30
	same := make([]float64, 10*n*d)
	for i := 0; i < 10*n; i++ {
		same[i*d], same[i*d+1] = 0.6, 0.8
	}
	orth := make([]float64, n*d)
	for i := 0; i < n; i++ {
		orth[i*d+i] = 1 + float64(i) // lengths differ: the kernel is cosine similarity
	}
	for _, tc := range []struct {
		name  string
		x     []float64
		total int
		want  float64
	}{
		{"24 copies", same[:n*d], n, 1.0 / 24},
		{"batches of 24 from 240 copies", same, 10 * n, 1.0 / 24},
		{"24 orthogonal", orth, n, 1},
	} {
		c, err := CalibratedVendi(tc.x, tc.total, d, n, 20, 7)
		if err != nil {
			t.Fatal(err)
		}
		if c.N != n || math.Abs(c.VendiPerN-tc.want) > 1e-9 || c.VendiPerNStd > 1e-9 {
			t.Errorf("%s: %+v, want Vendi/n %v", tc.name, c, tc.want)
		}
	}
}

// TestCompareSeparatesNoCorpus: the synthetic no_corpus run reuses three topics and one class name, so its
// calibrated Vendi/n is far below the full run's and its longest repeated-class streak longer (Table 8).
func TestCompareSeparatesNoCorpus(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	for _, v := range []synth.Variant{synth.Full, synth.NoCorpus} {
		o := synth.Small()
		o.Steps, o.Variant = 16, v
		if err := synth.Write(ctx, lk, string(v), o); err != nil {
			t.Fatal(err)
		}
	}
	tab, err := Compare(ctx, lk, []string{"full", "no_corpus"}, CompareOptions{Draws: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	full, noCorpus := tab.Float(0, "vendi_per_n"), tab.Float(1, "vendi_per_n")
	if !(full > 2*noCorpus) || tab.Float(0, "batch") != tab.Float(1, "batch") {
		t.Errorf("vendi_per_n full %v, no_corpus %v (n %v, %v): want full > 2×no_corpus at equal n", full, noCorpus,
			tab.Float(0, "batch"), tab.Float(1, "batch"))
	}
	// The paper's calibration: batches of 24 envs.
	tab, err = Compare(ctx, lk, []string{"full", "no_corpus"}, CompareOptions{Batch: DefaultBatch, Draws: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Float(0, "batch") != 24 || !(tab.Float(0, "vendi_per_n") > tab.Float(1, "vendi_per_n")) {
		t.Errorf("batches of 24: %v", tab.Rows)
	}
	if !(tab.Float(1, "longest_repeat") > tab.Float(0, "longest_repeat")) {
		t.Errorf("longest_repeat full %v, no_corpus %v", tab.Float(0, "longest_repeat"), tab.Float(1, "longest_repeat"))
	}
}

// solveRateScorer ranks envs by their pool-window no-hint solve rate (variant "solve") and by env_id
// order reversed (variant "last"), to check Rescore's pool split and top picks on the seed run.
type solveRateScorer struct{ steps []int64 }

func (s *solveRateScorer) Variants() []string { return []string{"solve", "last"} }
func (s *solveRateScorer) Step(step int64, _ []schemas.EpisodeRow) {
	s.steps = append(s.steps, step)
}
func (s *solveRateScorer) PoolEnd(pool int64, episodes []schemas.EpisodeRow) []RescoredEnv {
	wins, n := map[string]float64{}, map[string]float64{}
	for _, e := range episodes {
		if !e.Hinted && e.EndedBy != schemas.EndedEnvError {
			n[e.EnvID]++
			if e.Success {
				wins[e.EnvID]++
			}
		}
	}
	var out []RescoredEnv
	for id := range n {
		rate := wins[id] / n[id]
		out = append(out, RescoredEnv{EnvID: id, PoolStep: pool, SolveRate: rate,
			Rewards: map[string]float64{"solve": rate, "last": float64(id[0])}})
	}
	return out
}

func TestRescoreTopPicks(t *testing.T) {
	lk := loadSeedRun(t)
	scorer := &solveRateScorer{}
	picks, err := Rescore(context.Background(), lk, "seed", scorer)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range picks {
		got[p.Variant+"@"+string(rune('0'+p.PoolStep))] = p.Env.EnvID
	}
	// Pool 0: A 0.5, B 1.0. Pool 2: C 0.25, D 0.25, E 1.0 (its env_error episode excluded).
	want := map[string]string{"solve@0": "B", "solve@2": "E", "last@0": "B", "last@2": "E"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: top %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if len(scorer.steps) != 4 {
		t.Errorf("Step called for %v, want steps 0..3", scorer.steps)
	}
	summary := RescoreSummary(picks, scorer.Variants(), 0.2, 0.8)
	if summary.Float(0, "same_top_as_solve") != 1 || summary.Float(0, "top_solve_rate") != 1 {
		t.Errorf("summary: %+v", summary.Rows)
	}
}
