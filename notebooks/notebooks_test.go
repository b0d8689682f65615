// Package notebooks holds the Jupyter notebooks that redraw SPADE's Figures 6, 7, 8 and 12 (both panels) from a lake;
// these tests execute them the way CI does (jupyter nbconvert --execute) against the demo's lake (what
// scripts/demo.sh leaves) and against a small synthetic lake of two runs.
package notebooks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/gobuild"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/synth"
	"github.com/spadekit/spade/internal/testenv"
	"github.com/spadekit/spade/schemas"
)

// requireTools fails in CI (and skips elsewhere) when the notebook toolchain is missing: Debian's
// jupyter-nbconvert, python3-matplotlib, python3-sklearn, python3-pandas.
func requireTools(t *testing.T) (nbconvert, python string) {
	t.Helper()
	python = os.Getenv("SPADE_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	nb, err := exec.LookPath("jupyter-nbconvert")
	if err == nil {
		err = exec.Command(python, "-c", "import pandas, matplotlib, sklearn, nbformat, ipykernel").Run()
	}
	testenv.Require(t, err == nil, "notebooks need jupyter-nbconvert, python3-matplotlib, python3-sklearn, python3-pandas, python3-ipykernel: %v", err)
	return nb, python
}

// notebooks are the figures CI executes, each saving <name>.png.
var notebooks = []string{"figure6_learnable_band", "figure7_tsne", "figure8_audit", "figure12_regret", "figure12_scores"}

// buildSpade builds the spade binary into dir.
func buildSpade(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "spade")
	if err := gobuild.Build(gobuild.SpadePackage, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// executeAll runs every notebook with jupyter nbconvert --execute against a lake and checks that each
// saved its figure.
func executeAll(t *testing.T, nbconvert, bin, lakeDir, runs string) {
	t.Helper()
	sqlDir, err := filepath.Abs(filepath.Join("..", "sql"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	figures := filepath.Join(dir, "figures")
	for _, name := range notebooks {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, nbconvert, "--to", "notebook", "--execute",
				"--ExecutePreprocessor.timeout=180", "--output-dir", filepath.Join(dir, "executed"), name+".ipynb")
			cmd.Env = append(os.Environ(), "SPADE_BIN="+bin, "SPADE_LAKE="+lakeDir, "SPADE_RUNS="+runs,
				"SPADE_OUT="+figures, "SQL_DIR="+sqlDir, "PYDEVD_DISABLE_FILE_VALIDATION=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("nbconvert --execute %s: %v\n%s", name, err, out)
			}
			// Run by a kernel, the figure is drawn inline as well as saved.
			executed, err := os.ReadFile(filepath.Join(dir, "executed", name+".ipynb"))
			if err != nil || !strings.Contains(string(executed), `"image/png"`) {
				t.Errorf("%s drew no inline figure (no image/png output): %v", name, err)
			}
			st, err := os.Stat(filepath.Join(figures, name+".png"))
			if err != nil || st.Size() < 5000 {
				t.Fatalf("figure %s.png not written (or tiny): %v", name, err)
			}
		})
	}
}

// TestNotebookWithoutALake: a notebook pointed at a path that holds no lake stops at its first query
// with spade's own line (the path and the command that creates a lake there) and creates nothing.
func TestNotebookWithoutALake(t *testing.T) {
	nbconvert, _ := requireTools(t)
	dir := t.TempDir()
	bin := buildSpade(t, dir)
	missing := filepath.Join(dir, "typo")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nbconvert, "--to", "notebook", "--execute", "--output-dir", filepath.Join(dir, "executed"), "figure6_learnable_band.ipynb")
	cmd.Env = append(os.Environ(), "SPADE_BIN="+bin, "SPADE_LAKE="+missing, "SPADE_RUNS=", "SPADE_CACHE="+filepath.Join(dir, "cache"), "PYDEVD_DISABLE_FILE_VALIDATION=1")
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("SpadeError: spade: no lake at %s: create one with `spade --lake %s init --run NAME`", missing, missing)
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("figure6 on a missing lake: %v; want the error %q in:\n%s", err, want, out)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("the notebook created %s", missing)
	}
}

// TestNotebooksOnTheDemoLake executes the notebooks the way CI does, against the lake `make demo` leaves:
// scripts/demo.sh replays testdata/sample-run through every stage into a fresh lake (a short real run:
// one window, a dozen envs, no embeddings stored yet).
func TestNotebooksOnTheDemoLake(t *testing.T) {
	if testing.Short() {
		t.Skip("executes every notebook; skipped with -short")
	}
	nbconvert, python := requireTools(t)
	dir := t.TempDir()
	bin := buildSpade(t, dir)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "testdata", "sample-run", "replay.json")); err != nil {
		t.Fatalf("the demo's recording is missing: %v", err)
	}
	lakeDir := filepath.Join(dir, "lake")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	demo := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "demo.sh"), lakeDir, "demo")
	demo.Dir = root
	demo.Env = append(os.Environ(), "SPADE="+bin, "SPADE_CACHE="+filepath.Join(dir, "cache"), "SPADE_PYTHON="+python)
	if out, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, out)
	}
	executeAll(t, nbconvert, bin, lakeDir, "demo")
}

// TestNotebooksExecute executes the notebooks against a synthetic lake of two runs and two windows each
// (several runs side by side, more than one window).
func TestNotebooksExecute(t *testing.T) {
	if testing.Short() {
		t.Skip("executes every notebook; skipped with -short")
	}
	nbconvert, _ := requireTools(t)
	ctx := context.Background()
	dir := t.TempDir()
	bin := buildSpade(t, dir)
	lakeDir := filepath.Join(dir, "lake")
	lk := laketest.Open(t, lakeDir)
	for _, v := range []synth.Variant{synth.Full, synth.NoCorpus} {
		o := synth.Small()
		o.Steps, o.Variant = 16, v
		if err := synth.Write(ctx, lk, string(v), o); err != nil {
			t.Fatal(err)
		}
	}
	writeEvalResults(t, lk, string(synth.Full))
	executeAll(t, nbconvert, bin, lakeDir, "full,no_corpus")
}

// writeEvalResults gives a run eval_results for two benchmarks at three steps (4 items × 2 samples), so
// figure12_scores draws lines for it and its note for the other run.
func writeEvalResults(t *testing.T, lk *lake.Lake, run string) {
	t.Helper()
	for _, b := range []struct {
		name string
		kind schemas.BenchKind
	}{{"aime", schemas.BenchMath}, {"gpqa", schemas.BenchChoice}} {
		for k, step := range []int64{0, 8, 15} {
			var rows []schemas.EvalResultRow
			for item := 0; item < 4; item++ {
				for sample := 0; sample < 2; sample++ {
					score := 0.0
					if item+sample <= k+1 {
						score = 1
					}
					rows = append(rows, schemas.EvalResultRow{Step: step, Bench: b.name, Kind: b.kind, ItemID: fmt.Sprintf("%s-%d", b.name, item),
						Sample: int32(sample), Score: score, WeightsVersion: fmt.Sprint(step)})
				}
			}
			key := lake.PartitionKey{Run: run, Table: schemas.EvalResultsSpec.Name, Step: step, Fragment: "eval-" + b.name + "-c000000"}
			laketest.Write(t, lk, key, rows)
		}
	}
}
