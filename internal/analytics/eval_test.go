package analytics

import (
	"context"
	"math"
	"testing"

	"github.com/spadekit/spade/internal/bench"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// binom is C(n, k) by the closed form.
func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	return math.Round(math.Exp(lgamma(n+1) - lgamma(k+1) - lgamma(n-k+1)))
}

func lgamma(x int) float64 { v, _ := math.Lgamma(float64(x)); return v }

func TestPassAtKClosedForm(t *testing.T) {
	for n := 1; n <= 10; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				want := 1 - binom(n-c, k)/binom(n, k)
				if got := bench.PassAtK(n, c, k); math.Abs(got-want) > 1e-12 {
					t.Errorf("PassAtK(%d, %d, %d) = %v, want %v", n, c, k, got, want)
				}
			}
		}
	}
	if bench.PassAtK(4, 1, 1) != 0.25 || bench.PassAtK(4, 0, 4) != 0 || bench.PassAtK(4, 1, 4) != 1 {
		t.Error("hand cases")
	}
}

// TestEvalScoresModel runs sql/eval_scores.sql on hand-made rows: item a 1 of 4 correct, item b 3 of 4,
// item c 0 of 4 (scores 0/1), so avg@4 = 1/3, pass@1 = 1/3, pass@4 = 2/3, se = std(¼, ¾, 0)/√3.
func TestEvalScoresModel(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "r", config.Default())
	var rows []schemas.EvalResultRow
	correct := map[string]int{"a": 1, "b": 3, "c": 0}
	for item, c := range correct {
		for s := 0; s < 4; s++ {
			score := 0.0
			if s < c {
				score = 1
			}
			rows = append(rows, schemas.EvalResultRow{Step: 5, Bench: "m", ItemID: item, Kind: schemas.BenchMath, Sample: int32(s), Score: score})
		}
	}
	laketest.Write(t, lk, lake.PartitionKey{Run: "r", Table: schemas.EvalResultsSpec.Name, Step: 5, Fragment: "eval-m-c000000"}, rows)
	s, err := OpenRuns(ctx, lk, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := CreateModelViews(ctx, s.DB); err != nil {
		t.Fatal(err)
	}
	got, err := Query(ctx, s.DB, "select * from eval_scores")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 1 {
		t.Fatalf("%d rows", len(got.Rows))
	}
	means := []float64{0.25, 0.75, 0}
	mean := 1.0 / 3
	var ss float64
	for _, m := range means {
		ss += (m - mean) * (m - mean)
	}
	se := math.Sqrt(ss/2) / math.Sqrt(3)
	want := map[string]float64{"items": 3, "k": 4, "mean_score": mean, "avg_at_k": mean, "stderr": se, "pass_at_1": mean,
		"pass_at_k": (bench.PassAtK(4, 1, 4) + bench.PassAtK(4, 3, 4) + bench.PassAtK(4, 0, 4)) / 3}
	for col, w := range want {
		if g := got.Float(0, col); math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", col, g, w)
		}
	}
}
