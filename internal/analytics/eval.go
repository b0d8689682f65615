package analytics

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/spadekit/spade/internal/lake"
)

// AddEvalColumns appends to an ablation table (one row per run, the first column the run) one column
// per benchmark any run was evaluated on: the run's avg@K at its newest evaluated step minus the first
// run's, "Δ ± se" with se = sqrt(se_run² + se_first²) (independent runs). The first run shows its own
// score. A run not evaluated on a benchmark gets an empty cell.
func AddEvalColumns(ctx context.Context, lk *lake.Lake, t *Table, runs []string) error {
	type score struct{ mean, se float64 }
	scores := map[string]map[string]score{} // bench → run → newest score
	var benches []string
	for _, run := range runs {
		s, err := OpenRuns(ctx, lk, run)
		if err != nil {
			return err
		}
		if err := CreateModelViews(ctx, s.DB); err != nil {
			s.Close()
			return err
		}
		rows, err := Query(ctx, s.DB, `select bench, avg_at_k, stderr from eval_scores
			qualify row_number() over (partition by bench order by step desc, weights_version) = 1`)
		s.Close()
		if err != nil {
			return fmt.Errorf("analytics: run %s: eval_scores: %w", run, err)
		}
		for i := range rows.Rows {
			b := rows.String(i, "bench")
			if scores[b] == nil {
				scores[b] = map[string]score{}
				benches = append(benches, b)
			}
			scores[b][run] = score{rows.Float(i, "avg_at_k"), rows.Float(i, "stderr")}
		}
	}
	sort.Strings(benches)
	for _, b := range benches {
		t.Columns = append(t.Columns, "eval_"+b)
		first, hasFirst := scores[b][runs[0]]
		for i := range t.Rows {
			run, _ := t.Rows[i][0].(string)
			sc, ok := scores[b][run]
			switch {
			case !ok:
				t.Rows[i] = append(t.Rows[i], "")
			case run == runs[0] || !hasFirst:
				t.Rows[i] = append(t.Rows[i], fmt.Sprintf("%.3f ± %.3f", sc.mean, sc.se))
			default:
				t.Rows[i] = append(t.Rows[i], fmt.Sprintf("%+.3f ± %.3f", sc.mean-first.mean, math.Hypot(sc.se, first.se)))
			}
		}
	}
	return nil
}
