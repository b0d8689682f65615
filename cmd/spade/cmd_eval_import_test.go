package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ablate")

// publishWeights records that the Agent's weights trained at step were published as version, so the
// stages of every later step call them (stage.WeightsVersion).
func publishWeights(t *testing.T, lakeDir, run string, step int64, version string) {
	t.Helper()
	lk := laketest.Open(t, lakeDir)
	laketest.Write(t, lk, lake.PartitionKey{Run: run, Table: schemas.TrainMetricsSpec.Name, Step: step},
		[]schemas.TrainMetricsRow{{Step: step, Role: schemas.RoleAgent, WeightsVersion: version}})
}

// importedRows reads a run's eval_results at a step.
func importedRows(t *testing.T, lakeDir, run string, step int64) []schemas.EvalResultRow {
	t.Helper()
	rows, err := lake.ReadStep[schemas.EvalResultRow](context.Background(), laketest.Open(t, lakeDir), run, schemas.EvalResultsSpec.Name, step)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestEvalImportEveryFormat imports each fixture of testdata/harness through the CLI: every row lands
// at the step with the weights version that step's stages call, the per-bench counts are the fixtures',
// a repeated import is refused with exit 2 until --force, and a malformed folder exits 2 committing
// nothing.
func TestEvalImportEveryFormat(t *testing.T) {
	env, dir := evalEnv(t)
	must(t, env, "--run", "r", "init", "--preset", "qwen3-4b-games")
	publishWeights(t, dir, "r", 3, "spade-step3")
	publishWeights(t, dir, "r", 9, "spade-step9")
	want := map[string]map[string]int{ // format → bench → samples
		"bfcl": {"bfcl_v4_multi_turn_base": 3, "bfcl_v4_multi_turn_miss_func": 2, "bfcl_v4_multi_turn_miss_param": 2, "bfcl_v4_multi_turn_long_context": 2},
		"tau2": {"tau2_airline": 4, "tau2_retail": 4, "tau2_telecom": 2}, "acebench": {"acebench_agent_multi_step": 3, "acebench_agent_multi_turn": 2},
		"lcb": {"livecodebench_v6": 6}, "reasoning-gym": {"reasoning_gym_math": 3, "reasoning_gym_algorithmic": 2, "reasoning_gym_cognition": 1, "reasoning_gym_logic": 2},
	}
	total := 0
	for format, benches := range want {
		out := must(t, env, "--run", "r", "eval", "import", "--format", format, "--step", "5", repoFile("testdata/harness/"+format))
		for bench, n := range benches {
			if !strings.Contains(out, fmt.Sprintf("imported %s: ", bench)) || !strings.Contains(out, fmt.Sprintf(", %d samples,", n)) {
				t.Errorf("%s import says %q: want %s with %d samples", format, out, bench, n)
			}
			total += n
		}
		if !strings.Contains(out, `run r step 5 (weights "spade-step3")`) {
			t.Errorf("%s import says %q: want the step's weights spade-step3", format, out)
		}
	}
	rows := importedRows(t, dir, "r", 5)
	if len(rows) != total {
		t.Fatalf("%d rows at step 5, want %d", len(rows), total)
	}
	got := map[string]int{}
	for _, r := range rows {
		got[r.Bench]++
		if r.Step != 5 || r.WeightsVersion != "spade-step3" || r.Kind != schemas.BenchExternal {
			t.Fatalf("row %+v: want step 5, weights spade-step3 (the newest before step 5), kind external", r)
		}
	}
	for _, benches := range want {
		for bench, n := range benches {
			if got[bench] != n {
				t.Errorf("%s: %d rows, want %d", bench, got[bench], n)
			}
		}
	}

	again := spade(t, env, "", "--run", "r", "eval", "import", "--format", "lcb", "--step", "5", repoFile("testdata/harness/lcb"))
	if msg, ok := usageMessage(again.stderr); again.code != 2 || !ok || !strings.Contains(msg, "already holds lcb results at step 5; pass --force") {
		t.Errorf("a repeated import: exit %d, %q; want 2 and a refusal naming --force", again.code, again.stderr)
	}
	out := must(t, env, "--run", "r", "eval", "import", "--format", "lcb", "--step", "5", "--force", repoFile("testdata/harness/lcb"))
	if !strings.HasPrefix(out, "replaced livecodebench_v6: 3 items, 6 samples, mean score 0.500") {
		t.Errorf("forced import says %q", out)
	}

	bad := filepath.Join(t.TempDir(), "lcb")
	os.MkdirAll(filepath.Join(bad, "output"), 0o755)
	os.WriteFile(filepath.Join(bad, "output", "Scenario.codegeneration_1_0.2_eval_all.json"),
		[]byte(`[{"question_id": "abc1", "graded_list": [true]}, {"question_id": "abc2", "graded_list": "yes"}]`), 0o644)
	for _, args := range [][]string{
		{"--format", "lcb", "--step", "12", bad},
		{"--format", "helm", "--step", "12", bad},
		{"--format", "bfcl", "--step", "12", repoFile("testdata/harness/tau2")},
		{"--format", "tau2", "--step", "12", filepath.Join(bad, "missing")},
		{"--format", "tau2", "--step", "12"},
	} {
		r := spade(t, env, "", append([]string{"--run", "r", "eval", "import"}, args...)...)
		msg, ok := usageMessage(r.stderr)
		if r.code != 2 || !ok {
			t.Errorf("eval import %v: exit %d, stderr %q; want 2, one line and the usage line", args, r.code, r.stderr)
		}
		if args[1] == "lcb" && !strings.Contains(msg, "problem 2 (abc2): no graded_list") {
			t.Errorf("the malformed file's message %q does not say what is wrong", msg)
		}
	}
	steps, err := laketest.Open(t, dir).Steps(context.Background(), "r", schemas.EvalResultsSpec.Name)
	if err != nil || len(steps) != 1 || steps[0] != 5 {
		t.Errorf("eval_results steps %v (%v): the refused imports committed something", steps, err)
	}
}

// benchRows makes one sample per score of a benchmark at a step: items i0, i1, ...
func benchRows(step int64, weights, bench string, kind schemas.BenchKind, scores ...float64) []schemas.EvalResultRow {
	rows := make([]schemas.EvalResultRow, len(scores))
	for i, s := range scores {
		rows[i] = schemas.EvalResultRow{Step: step, Bench: bench, ItemID: fmt.Sprintf("i%d", i), Kind: kind, Score: s, WeightsVersion: weights}
	}
	return rows
}

// writeEval commits rows as one eval fragment of a run's step.
func writeEval(t *testing.T, lk *lake.Lake, run string, step int64, fragment string, rows []schemas.EvalResultRow) {
	t.Helper()
	laketest.Write(t, lk, lake.PartitionKey{Run: run, Table: schemas.EvalResultsSpec.Name, Step: step, Fragment: fragment}, rows)
}

// gamesRows are a checkpoint's rows on Table 1's benchmarks: each given score is one bench's items (0 or
// 1, or a partial score), a bench given no scores is left out.
func gamesRows(step int64, weights string, scores map[string][]float64) []schemas.EvalResultRow {
	kinds := map[string]schemas.BenchKind{"aime25": schemas.BenchMath, "aime26": schemas.BenchMath, "gpqa_diamond": schemas.BenchChoice}
	var rows []schemas.EvalResultRow
	for bench, s := range scores {
		kind, ok := kinds[bench]
		if !ok {
			kind = schemas.BenchExternal
		}
		rows = append(rows, benchRows(step, weights, bench, kind, s...)...)
	}
	return rows
}

// TestAblatePaperTablesGolden renders Tables 1-3 over three runs in every format and compares them with
// testdata/ablate/table<N>.<md|csv|tex> (regenerate with -update and read the diff). The runs are
// built to exercise the choices the tables make: run full has every suite at steps 10 and 20 (step 20
// better on average), no_memory has every suite at step 10 but only seven at step 20 with a higher
// average (so step 10 is chosen: most suites first), no_corpus has no games suite at all and Table 2's
// suites from the harness fixtures through `spade eval import`, full has two of its three.
func TestAblatePaperTablesGolden(t *testing.T) {
	env, dir := evalEnv(t)
	for _, run := range []string{"full", "no_memory", "no_corpus"} {
		must(t, env, "--run", run, "init", "--preset", "qwen3-4b-games")
	}
	lk := laketest.Open(t, dir)
	all := func(aime25, aime26, gpqa, lcb, math, algo, cog, logic []float64) map[string][]float64 {
		return map[string][]float64{"aime25": aime25, "aime26": aime26, "gpqa_diamond": gpqa, "livecodebench_v6": lcb,
			"reasoning_gym_math": math, "reasoning_gym_algorithmic": algo, "reasoning_gym_cognition": cog, "reasoning_gym_logic": logic}
	}
	writeEval(t, lk, "full", 10, "games", gamesRows(10, "full-9", all(
		[]float64{1, 0, 0, 0}, []float64{0, 0, 0, 1}, []float64{1, 1, 0, 0}, []float64{1, 0},
		[]float64{1, 1, 0.5}, []float64{0, 1}, []float64{0.25, 0.25}, []float64{1, 0, 0, 0})))
	writeEval(t, lk, "full", 20, "games", gamesRows(20, "full-19", all(
		[]float64{1, 1, 0, 0}, []float64{1, 0, 0, 0}, []float64{1, 1, 1, 0}, []float64{1, 0},
		[]float64{1, 1, 1}, []float64{0.5, 1}, []float64{0.5, 0.25}, []float64{1, 1, 0, 0})))
	writeEval(t, lk, "no_memory", 10, "games", gamesRows(10, "nm-9", all(
		[]float64{1, 0, 0, 0}, []float64{0, 0, 0, 0}, []float64{1, 0, 0, 0}, []float64{0, 0},
		[]float64{1, 0, 0.5}, []float64{0, 1}, []float64{0, 0.25}, []float64{1, 0, 0, 0})))
	partial := all(
		[]float64{1, 1, 1, 0}, nil, []float64{1, 1, 1, 1}, []float64{1, 1},
		[]float64{1, 1, 1}, []float64{1, 1}, []float64{1, 1}, []float64{1, 1, 1, 1})
	delete(partial, "aime26")
	writeEval(t, lk, "no_memory", 20, "games", gamesRows(20, "nm-19", partial))
	// full's tools: BFCL's four categories, ACEBench's two agent categories, and τ² on one domain of three
	var tools []schemas.EvalResultRow
	for bench, scores := range map[string][]float64{
		"bfcl_v4_multi_turn_base": {1, 0}, "bfcl_v4_multi_turn_miss_func": {1, 1}, "bfcl_v4_multi_turn_miss_param": {0, 0},
		"bfcl_v4_multi_turn_long_context": {1, 0}, "tau2_airline": {1, 1, 0}, "acebench_agent_multi_step": {1, 1},
		"acebench_agent_multi_turn": {1, 0, 1},
	} {
		tools = append(tools, benchRows(20, "full-19", bench, schemas.BenchExternal, scores...)...)
	}
	writeEval(t, lk, "full", 20, "tools", tools)
	writeEval(t, lk, "no_memory", 20, "tools", benchRows(20, "nm-19", "acebench_agent_multi_turn", schemas.BenchExternal, 1))
	for _, format := range []string{"bfcl", "tau2", "acebench"} {
		must(t, env, "--run", "no_corpus", "eval", "import", "--format", format, "--step", "30", repoFile("testdata/harness/"+format))
	}

	golden := repoFile("testdata/ablate")
	for _, table := range []string{"1", "2", "3"} {
		for format, ext := range map[string]string{"markdown": "md", "csv": "csv", "latex": "tex"} {
			got := must(t, env, "--run", "full", "--run", "no_memory", "--run", "no_corpus", "ablate", "--table", table, "--format", format)
			path := filepath.Join(golden, "table"+table+"."+ext)
			if *update {
				os.MkdirAll(golden, 0o755)
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("ablate --table %s --format %s differs from %s:\n--- got\n%s\n--- want\n%s", table, format, path, got, want)
			}
		}
	}
	if got := must(t, env, "--run", "full", "ablate", "--table", "1"); got != must(t, env, "--run", "full", "ablate", "--table", "1", "--format", "markdown") {
		t.Error("--table without --format is not markdown")
	}
	for _, args := range [][]string{{"--table", "4"}, {"--table", "1", "--format", "json"}, {"--table", "2", "--rescore"}} {
		r := spade(t, env, "", append([]string{"--run", "full", "ablate"}, args...)...)
		if r.code != 2 || !isUsageError(r.stderr) {
			t.Errorf("ablate %v: exit %d, %q; want a usage error", args, r.code, r.stderr)
		}
	}
	if r := spade(t, env, "", "--run", "full", "--run", "nope", "ablate", "--table", "1"); r.code != 2 {
		t.Errorf("ablate --table over an unknown run: exit %d", r.code)
	}
}
