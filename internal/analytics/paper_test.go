package analytics

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// samples makes one row per score of a benchmark item at a checkpoint (sample 0, 1, ...).
func samples(step int64, weights, bench, item string, scores ...float64) []schemas.EvalResultRow {
	rows := make([]schemas.EvalResultRow, len(scores))
	for i, s := range scores {
		rows[i] = schemas.EvalResultRow{Step: step, Bench: bench, ItemID: item, Kind: schemas.BenchExternal, Sample: int32(i), Score: s, WeightsVersion: weights}
	}
	return rows
}

// TestPaperTablesModel checks sql/paper_tables.sql by hand on Table 2's suites:
//   - τ²-bench reads pass@1 (a sample counts when its score is 1), the others avg@K: at step 4, airline's
//     one task has samples 1 and 0.5 → pass@1 ½ (avg@K would be ¾), retail ⅓ pass@1 (1, 0, 0), telecom 1:
//     τ² = (½ + ⅓ + 1)/3;
//   - a column needs all its benchmarks: ACEBench-Agent at step 4 has only multi_step → missing, so the
//     average is over 2 of 3 columns; BFCL (four categories) = (1 + 0 + 1 + 0.5)/4;
//   - step 8 has every column, with a lower average than step 4's two columns, and is still selected
//     (most columns first); step 12 ties step 8 and, being later, wins.
func TestPaperTablesModel(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "r", config.Default())
	bfcl := func(step int64, w string, base, fn, param, long float64) []schemas.EvalResultRow {
		var rows []schemas.EvalResultRow
		for bench, s := range map[string]float64{"base": base, "miss_func": fn, "miss_param": param, "long_context": long} {
			rows = append(rows, samples(step, w, "bfcl_v4_multi_turn_"+bench, "x", s)...)
		}
		return rows
	}
	write := func(step int64, rows ...[]schemas.EvalResultRow) {
		var all []schemas.EvalResultRow
		for _, r := range rows {
			all = append(all, r...)
		}
		laketest.Write(t, lk, lake.PartitionKey{Run: "r", Table: schemas.EvalResultsSpec.Name, Step: step, Fragment: "t"}, all)
	}
	write(4, bfcl(4, "w3", 1, 0, 1, 0.5), samples(4, "w3", "tau2_airline", "0", 1, 0.5),
		samples(4, "w3", "tau2_retail", "0", 1, 0, 0), samples(4, "w3", "tau2_telecom", "0", 1),
		samples(4, "w3", "acebench_agent_multi_step", "0", 1))
	low := func(step int64, w string) [][]schemas.EvalResultRow {
		return [][]schemas.EvalResultRow{bfcl(step, w, 0, 0, 0, 0), samples(step, w, "tau2_airline", "0", 0),
			samples(step, w, "tau2_retail", "0", 0), samples(step, w, "tau2_telecom", "0", 1),
			samples(step, w, "acebench_agent_multi_step", "0", 0), samples(step, w, "acebench_agent_multi_turn", "0", 0.5)}
	}
	write(8, low(8, "w7")...)
	write(12, low(12, "w11")...)

	tbl, err := LoadPaperTable(ctx, lk, []string{"r"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tbl.Columns, "|"); got != "BFCL v4 multi-turn|τ²-bench|ACEBench-Agent" {
		t.Fatalf("columns %s", got)
	}
	row := tbl.Rows[0]
	if row.Step != 12 || row.Weights != "w11" || row.Scored != 3 {
		t.Errorf("selected step %d (%s, %d columns), want 12: every column, tied with 8 and later", row.Step, row.Weights, row.Scored)
	}
	want := []float64{0, 1.0 / 3, 0.25}
	for i, w := range want {
		if math.Abs(row.Scores[i]-w) > 1e-12 {
			t.Errorf("%s = %v, want %v", tbl.Columns[i], row.Scores[i], w)
		}
	}
	if math.Abs(row.Average-(0+1.0/3+0.25)/3) > 1e-12 {
		t.Errorf("average %v", row.Average)
	}

	s, err := Open(ctx, lk, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	step4, err := Query(ctx, s.DB, "select column_name, score, average, columns_scored from paper_tables where step = 4 order by column_index")
	if err != nil {
		t.Fatal(err)
	}
	tau2 := (0.5 + 1.0/3 + 1) / 3
	bfcl4 := (1 + 0 + 1 + 0.5) / 4.0
	if len(step4.Rows) != 3 || math.Abs(step4.Float(0, "score")-bfcl4) > 1e-12 || math.Abs(step4.Float(1, "score")-tau2) > 1e-12 ||
		step4.String(2, "score") != "" || step4.Float(0, "columns_scored") != 2 || math.Abs(step4.Float(0, "average")-(bfcl4+tau2)/2) > 1e-12 {
		var b bytes.Buffer
		for _, r := range step4.Rows {
			b.WriteString(TableValue(r[0]) + " " + TableValue(r[1]) + " " + TableValue(r[2]) + " " + TableValue(r[3]) + "\n")
		}
		t.Errorf("step 4 columns:\n%s want BFCL %v, τ² %v (pass@1), ACEBench missing, average over 2", b.String(), bfcl4, tau2)
	}
}
