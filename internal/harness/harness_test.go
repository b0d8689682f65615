package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/inputfile"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

var fixtures = filepath.Join("..", "..", "testdata", "harness")

// benchTotals sums rows per bench: samples, items, score.
type benchTotals struct {
	samples, items int
	score          float64
}

func totals(rows []schemas.EvalResultRow) map[string]benchTotals {
	out := map[string]benchTotals{}
	items := map[string]bool{}
	for _, r := range rows {
		t := out[r.Bench]
		t.samples++
		t.score += r.Score
		if !items[r.Bench+"/"+r.ItemID] {
			items[r.Bench+"/"+r.ItemID] = true
			t.items++
		}
		out[r.Bench] = t
	}
	return out
}

// scoreOf finds one row's score, failing the test when the row is missing.
func scoreOf(t *testing.T, rows []schemas.EvalResultRow, bench, item string, sample int32) schemas.EvalResultRow {
	t.Helper()
	for _, r := range rows {
		if r.Bench == bench && r.ItemID == item && r.Sample == sample {
			return r
		}
	}
	t.Fatalf("no row %s %s sample %d", bench, item, sample)
	return schemas.EvalResultRow{}
}

// TestReadEveryFormat reads each fixture folder and checks the rows against the counts written into the
// fixtures by hand (see testdata/harness/README.md for where each layout comes from).
func TestReadEveryFormat(t *testing.T) {
	cases := []struct {
		format  Format
		want    map[string]benchTotals
		skipped string
		check   func(t *testing.T, rows []schemas.EvalResultRow)
	}{
		{BFCL, map[string]benchTotals{
			"bfcl_v4_multi_turn_base": {3, 3, 2}, "bfcl_v4_multi_turn_miss_func": {2, 2, 2},
			"bfcl_v4_multi_turn_miss_param": {2, 2, 0}, "bfcl_v4_multi_turn_long_context": {2, 2, 1}}, "",
			func(t *testing.T, rows []schemas.EvalResultRow) {
				r := scoreOf(t, rows, "bfcl_v4_multi_turn_base", "multi_turn_base_1", 0)
				if r.Score != 0 || !strings.HasPrefix(r.Detail, "multi_turn:instance_state_mismatch: Model instance") {
					t.Errorf("failed entry: %+v", r)
				}
				if r := scoreOf(t, rows, "bfcl_v4_multi_turn_base", "multi_turn_base_2", 0); r.Score != 1 {
					t.Errorf("passing entry: %+v", r)
				}
			}},
		{Tau2, map[string]benchTotals{"tau2_airline": {4, 2, 3}, "tau2_retail": {4, 2, 2}, "tau2_telecom": {2, 1, 1}},
			"1 simulations that never produced an evaluable rollout",
			func(t *testing.T, rows []schemas.EvalResultRow) {
				if r := scoreOf(t, rows, "tau2_retail", "1", 1); r.Score != 1 {
					t.Errorf("a reward within 1e-6 of 1 is a success: %+v", r)
				}
				if r := scoreOf(t, rows, "tau2_airline", "0", 1); r.Score != 0 || r.Detail != "reward 0, agent_stop" {
					t.Errorf("trial 1 of task 0: %+v", r)
				}
			}},
		{ACEBench, map[string]benchTotals{"acebench_agent_multi_step": {3, 3, 2}, "acebench_agent_multi_turn": {2, 2, 1}},
			"1 score files of categories other than agent (no table reads them): normal_atom_bool",
			func(t *testing.T, rows []schemas.EvalResultRow) {
				if r := scoreOf(t, rows, "acebench_agent_multi_step", "agent_multi_step_1", 0); r.Score != 0 || r.Detail != "wrong_state: The final state of MessageApi does not match the expected state." {
					t.Errorf("failed entry: %+v", r)
				}
			}},
		{LCB, map[string]benchTotals{"livecodebench_v6": {6, 3, 3}}, "",
			func(t *testing.T, rows []schemas.EvalResultRow) {
				if r := scoreOf(t, rows, "livecodebench_v6", "abc387_f", 1); r.Score != 1 || r.Extracted != "print(1)" {
					t.Errorf("second generation of abc387_f: %+v", r)
				}
			}},
		{ReasoningGym, map[string]benchTotals{"reasoning_gym_math": {3, 3, 2}, "reasoning_gym_algorithmic": {2, 2, 1.5},
			"reasoning_gym_cognition": {1, 1, 0}, "reasoning_gym_logic": {2, 1, 1}}, "",
			func(t *testing.T, rows []schemas.EvalResultRow) {
				if r := scoreOf(t, rows, "reasoning_gym_logic", "knights_knaves_3", 1); r.Score != 0 || r.Extracted != "False" {
					t.Errorf("second completion: %+v", r)
				}
				if r := scoreOf(t, rows, "reasoning_gym_algorithmic", "word_sorting_0", 0); r.Score != 0.5 || r.Detail != "expected a, b, c" {
					t.Errorf("partial credit: %+v", r)
				}
			}},
	}
	for _, c := range cases {
		t.Run(string(c.format), func(t *testing.T) {
			rows, skipped, err := Read(c.format, filepath.Join(fixtures, string(c.format)))
			if err != nil {
				t.Fatal(err)
			}
			got := totals(rows)
			if len(got) != len(c.want) {
				t.Errorf("benches %v, want %v", got, c.want)
			}
			for bench, w := range c.want {
				if g := got[bench]; g != w {
					t.Errorf("%s: %d samples of %d items scoring %g in total, want %d of %d scoring %g", bench, g.samples, g.items, g.score, w.samples, w.items, w.score)
				}
			}
			for _, r := range rows {
				if r.Kind != schemas.BenchExternal {
					t.Fatalf("kind %q", r.Kind)
				}
			}
			if !strings.HasPrefix(skipped, c.skipped) || (c.skipped == "") != (skipped == "") {
				t.Errorf("skipped %q, want %q...", skipped, c.skipped)
			}
			c.check(t, rows)
		})
	}
}

// copyFixture copies a fixture folder into a temporary one, so a test can break a file of it.
func copyFixture(t *testing.T, format Format) string {
	t.Helper()
	src := filepath.Join(fixtures, string(format))
	dst := t.TempDir()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// rewrite replaces old with new in the one file below dir whose name ends with suffix.
func rewrite(t *testing.T, dir, suffix, old, new string) {
	t.Helper()
	files, _ := findFiles(dir, func(name string) bool { return strings.HasSuffix(name, suffix) })
	if len(files) != 1 {
		t.Fatalf("%d files ending %s", len(files), suffix)
	}
	b, _ := os.ReadFile(files[0])
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", files[0], old)
	}
	os.WriteFile(files[0], []byte(strings.Replace(string(b), old, new, 1)), 0o644)
}

// TestBadInputIsOneLine: each kind of malformed or inconsistent input is an *inputfile.Error whose
// message names the file and the problem on one line.
func TestBadInputIsOneLine(t *testing.T) {
	cases := []struct {
		name   string
		format Format
		breaks func(t *testing.T, dir string)
		want   string
	}{
		{"bfcl summary disagrees", BFCL, func(t *testing.T, dir string) {
			rewrite(t, dir, "multi_turn_base_score.json", `"correct_count": 2`, `"correct_count": 3`)
		}, "summary says 3 of 3 correct, but 1 entries are listed as failed"},
		{"bfcl score without result", BFCL, func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "result"))
		}, "no result file of its category"},
		{"bfcl bad line", BFCL, func(t *testing.T, dir string) {
			rewrite(t, dir, "miss_func_score.json", `{"accuracy"`, `{accuracy`)
		}, "line 1: not a JSON object"},
		{"tau2 reward outside [0, 1]", Tau2, func(t *testing.T, dir string) {
			rewrite(t, dir, "retail_llm_agent_spade-step100_user_simulator_gpt-4.1.json", `"reward": 0.9999999`, `"reward": 3`)
		}, "reward 3 is outside [0, 1]"},
		{"tau2 truncated", Tau2, func(t *testing.T, dir string) {
			rewrite(t, dir, "telecom_llm_agent_spade-step100_user_simulator_gpt-4.1.json", `"simulations"`, `"simulations`)
		}, "not valid JSON"},
		{"acebench id out of range", ACEBench, func(t *testing.T, dir string) {
			rewrite(t, dir, "multi_turn_score.json", `{"id": 0,`, `{"id": 7,`)
		}, "a failed entry whose id is not an index below total_count 2"},
		{"lcb graded_list missing", LCB, func(t *testing.T, dir string) {
			rewrite(t, dir, "_eval_all.json", `"graded_list"`, `"graded"`)
		}, "no graded_list"},
		{"reasoning gym score missing", ReasoningGym, func(t *testing.T, dir string) {
			rewrite(t, dir, "gcd.json", `"score": 1.0`, `"score": "high"`)
		}, "sample 0 has no numeric score"},
		{"nothing there", LCB, func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "output"))
		}, "no lcb results found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyFixture(t, c.format)
			c.breaks(t, dir)
			_, _, err := Read(c.format, dir)
			var inputErr *inputfile.Error
			if !errors.As(err, &inputErr) {
				t.Fatalf("error %v (%T), want an *inputfile.Error", err, err)
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, dir) {
				t.Errorf("error %q: want one line naming a file below %s and saying %q", msg, dir, c.want)
			}
		})
	}
	if _, err := ParseFormat("helm"); err == nil || !strings.Contains(err.Error(), "bfcl, tau2, acebench, lcb, reasoning-gym") {
		t.Errorf("ParseFormat(helm): %v", err)
	}
}

// TestImportCommitsOnceAndReplacesOnlyWhenForced: an import commits every row tagged with the step and
// weights; a second one is refused without Force and replaces the first with it; a bad folder commits
// nothing.
func TestImportCommitsOnceAndReplacesOnlyWhenForced(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "r", config.Default())
	key := lake.PartitionKey{Run: "r", Table: schemas.EvalResultsSpec.Name, Step: 40, Fragment: schemas.ImportFragment("tau2")}

	broken := copyFixture(t, Tau2)
	rewrite(t, broken, "telecom_llm_agent_spade-step100_user_simulator_gpt-4.1.json", `"reward": 1.0`, `"reward": -2`)
	if _, err := Import(ctx, lk, Options{Run: "r", Step: 40, Weights: "step39", Format: Tau2, Dir: broken}); err == nil {
		t.Fatal("a bad folder was imported")
	}
	if ok, _ := lk.Committed(ctx, key); ok {
		t.Fatal("a refused import committed its fragment")
	}

	res, err := Import(ctx, lk, Options{Run: "r", Step: 40, Weights: "step39", Format: Tau2, Dir: filepath.Join(fixtures, "tau2")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Benches) != 3 || res.Benches[0].Bench != "tau2_airline" || res.Benches[0].Items != 2 || res.Benches[0].Samples != 4 || res.Benches[0].Mean != 0.75 {
		t.Errorf("summary %+v", res.Benches)
	}
	rows, err := lake.ReadRows[schemas.EvalResultRow](ctx, lk, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 10", len(rows))
	}
	for _, r := range rows {
		if r.Step != 40 || r.WeightsVersion != "step39" || r.Kind != schemas.BenchExternal {
			t.Fatalf("row %+v: want step 40, weights step39, kind external", r)
		}
	}

	_, err = Import(ctx, lk, Options{Run: "r", Step: 40, Weights: "step39", Format: Tau2, Dir: filepath.Join(fixtures, "tau2")})
	var inputErr *inputfile.Error
	if !errors.As(err, &inputErr) || !strings.Contains(err.Error(), "already holds tau2 results at step 40; pass --force") {
		t.Fatalf("a second import: %v, want a refusal naming --force", err)
	}

	only := copyFixture(t, Tau2)
	os.Remove(filepath.Join(only, "simulations", "20261203_retail_llm_agent_spade-step100_user_simulator_gpt-4.1.json"))
	os.Remove(filepath.Join(only, "simulations", "20261203_telecom_llm_agent_spade-step100_user_simulator_gpt-4.1.json"))
	res, err = Import(ctx, lk, Options{Run: "r", Step: 40, Weights: "step39", Format: Tau2, Dir: only, Force: true})
	if err != nil || !res.Replaced {
		t.Fatalf("forced import: %v, replaced %v", err, res.Replaced)
	}
	rows, err = lake.ReadStep[schemas.EvalResultRow](ctx, lk, "r", schemas.EvalResultsSpec.Name, 40)
	if err != nil {
		t.Fatal(err)
	}
	if got := totals(rows); len(got) != 1 || got["tau2_airline"].samples != 4 {
		t.Errorf("after the forced import the step holds %v, want only tau2_airline's 4 samples", got)
	}
}
