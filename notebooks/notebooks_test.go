// Package notebooks holds the Jupyter notebooks that redraw SPADE's Figures 6, 7, 8 and 12 from a lake;
// this test executes them the way CI does (jupyter nbconvert --execute) against a small synthetic lake.
package notebooks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spade-rl/spade/internal/lake"
	"github.com/spade-rl/spade/internal/synth"
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
	if err != nil {
		msg := "notebooks need jupyter-nbconvert, python3-matplotlib, python3-sklearn, python3-pandas, python3-ipykernel: "
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + err.Error())
		}
		t.Skip(msg + err.Error())
	}
	return nb, python
}

func TestNotebooksExecute(t *testing.T) {
	nbconvert, _ := requireTools(t)
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "spade")
	build := exec.Command("go", "build", "-o", bin, "github.com/spade-rl/spade/cmd/spade")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	lakeDir := filepath.Join(dir, "lake")
	lk, err := lake.Open(ctx, lakeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []synth.Variant{synth.Full, synth.NoCorpus} {
		o := synth.Small()
		o.Steps, o.Variant = 16, v
		if err := synth.Write(ctx, lk, string(v), o); err != nil {
			t.Fatal(err)
		}
	}
	sqlDir, err := filepath.Abs(filepath.Join("..", "sql"))
	if err != nil {
		t.Fatal(err)
	}
	figures := filepath.Join(dir, "figures")
	for _, name := range []string{"figure6_learnable_band", "figure7_tsne", "figure8_audit", "figure12_regret"} {
		t.Run(name, func(t *testing.T) {
			cctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(cctx, nbconvert, "--to", "notebook", "--execute",
				"--ExecutePreprocessor.timeout=180", "--output-dir", filepath.Join(dir, "executed"), name+".ipynb")
			cmd.Env = append(os.Environ(), "SPADE_BIN="+bin, "SPADE_LAKE="+lakeDir, "SPADE_RUNS=full,no_corpus",
				"SPADE_OUT="+figures, "SQL_DIR="+sqlDir, "PYDEVD_DISABLE_FILE_VALIDATION=1", "MPLBACKEND=Agg")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("nbconvert --execute %s: %v\n%s", name, err, out)
			}
			st, err := os.Stat(filepath.Join(figures, name+".png"))
			if err != nil || st.Size() < 5000 {
				t.Fatalf("figure %s.png not written (or tiny): %v", name, err)
			}
		})
	}
}
