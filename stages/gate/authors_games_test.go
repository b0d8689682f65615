package gate

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// authorsRow is one row of testdata/envs-authors/games/README.md: a program, whether the authors'
// validation accepts it, and what spade's official gate says (accepted, or refused by a check whose
// error contains a given text).
type authorsRow struct {
	program, authors, spade string
}

// readAuthorsTable reads the table of a README: the rows whose first cell names a .py file.
func readAuthorsTable(t *testing.T, path string) []authorsRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []authorsRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cells) < 4 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if !strings.HasSuffix(name, ".py") {
			continue
		}
		rows = append(rows, authorsRow{program: name, authors: strings.TrimSpace(cells[1]), spade: strings.Trim(strings.TrimSpace(cells[2]), "`")})
	}
	return rows
}

// newAuthorsPool is the sandbox of the presets as far as loading goes: the authors' f-string repair,
// Cls(max_turns=25) and a load deadline long enough for the slow-loading program (the gate gives 60 s).
func newAuthorsPool(t *testing.T) *sandbox.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sandbox.NewPool(ctx, sandbox.Options{Python: testPython(), Isolation: sandbox.IsolationBwrap, Workers: 2,
		LoadTimeout: 2 * time.Second, ResetTimeout: 2 * time.Second, StepTimeout: 5 * time.Second, RepairFStrings: true, MaxTurns: 25})
	if err != nil {
		t.Fatalf("sandbox pool: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Every program of testdata/envs-authors/games, written to the authors' games contract, is accepted by
// spade's official gate (gate.checks official, the gymnasium contract, gate.load_timeout_seconds 60,
// gate.shape authors)
// exactly when its README row says so, and a refused one fails with the README's reason; every program
// the authors' validation accepts is accepted, but for those that reach outside themselves (files,
// processes, the network, the interpreter's internals), which the README marks and which spade refuses.
func TestAuthorsGamesGate(t *testing.T) {
	dir := repoPath("testdata", "envs-authors", "games")
	rows := readAuthorsTable(t, filepath.Join(dir, "README.md"))
	programs, _ := filepath.Glob(filepath.Join(dir, "*.py"))
	if len(rows) < 12 || len(rows) != len(programs) {
		t.Fatalf("README lists %d programs, the folder holds %d (want one row each, at least 12)", len(rows), len(programs))
	}
	pool := newAuthorsPool(t)
	ctx := context.Background()
	outside := 0
	for _, row := range rows {
		t.Run(strings.TrimSuffix(row.program, ".py"), func(t *testing.T) {
			code, err := os.ReadFile(filepath.Join(dir, row.program))
			if err != nil {
				t.Fatal(err)
			}
			v := Check(ctx, pool, string(code), CheckOptions{Setting: schemas.SettingGames, Hint: "think", Checks: config.GateOfficial,
				Contract: schemas.ContractGymnasium, LoadTimeout: 60 * time.Second, Shape: config.ShapeAuthors})
			if v.Err != nil {
				t.Fatalf("the checks could not run: %v", v.Err)
			}
			switch {
			case row.spade == "accepted":
				if !v.Accepted {
					t.Fatalf("README says accepted; refused: %s", v.FailureText())
				}
				if row.authors != "accepts" {
					t.Fatalf("spade accepts what the README says the authors refuse")
				}
			case strings.HasPrefix(row.spade, "refused: "):
				want := strings.TrimPrefix(row.spade, "refused: ")
				if v.Accepted || !strings.Contains(v.FailureText(), want) {
					t.Fatalf("README says refused with %q; accepted=%v %s", want, v.Accepted, v.FailureText())
				}
				switch row.authors {
				case "refuses":
				case "accepts (reaches outside)":
					outside++
				default:
					t.Fatalf("refused, but the README says the authors %q: only a program that reaches outside itself may be refused where the authors accept", row.authors)
				}
			default:
				t.Fatalf("README cell %q is neither accepted nor refused: REASON", row.spade)
			}
		})
	}
	if outside < 3 {
		t.Errorf("%d programs that reach outside themselves, want at least 3", outside)
	}
}
