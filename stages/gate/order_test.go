package gate

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// TestCheckTablesAreTheDocumentedOrder: the gate tables of docs/sandbox.md list the check tables' names
// in their order (the strict table under "Static checks and the gate", the official one under "The
// official gate"), and each tools table extends its games table.
func TestCheckTablesAreTheDocumentedOrder(t *testing.T) {
	games, tools := CheckNames(schemas.SettingGames), CheckNames(schemas.SettingTools)
	if !slices.Equal(tools[:len(games)], games) {
		t.Fatalf("tools checks %v do not start with the games checks %v", tools, games)
	}
	if !slices.Equal(CheckNames(""), games) || !slices.Equal(GamesChecks, games) || !slices.Equal(ToolsChecks, tools) {
		t.Fatalf("GamesChecks %v / ToolsChecks %v / CheckNames(\"\") %v differ from the tables", GamesChecks, ToolsChecks, CheckNames(""))
	}
	officialGames := CheckNamesFor(schemas.SettingGames, config.GateOfficial)
	officialTools := CheckNamesFor(schemas.SettingTools, config.GateOfficial)
	if !slices.Equal(officialTools[:len(officialGames)], officialGames) {
		t.Fatalf("official tools checks %v do not start with the official games checks %v", officialTools, officialGames)
	}
	page, err := os.ReadFile(repoPath("docs", "sandbox.md"))
	if err != nil {
		t.Fatal(err)
	}
	authorsTools := CheckNamesWith(schemas.SettingTools, config.GateOfficial, schemas.ContractGymnasium, config.ToolsChecksAuthors)
	if !slices.Equal(authorsTools[:len(officialGames)], officialGames) {
		t.Fatalf("the authors' official tools checks %v do not start with the official games checks %v", authorsTools, officialGames)
	}
	for _, table := range []struct {
		heading string
		want    []string
	}{{"## Static checks and the gate", tools}, {"## The official gate", officialTools}, {"## The official gate", authorsTools}} {
		_, section, ok := strings.Cut(string(page), "\n"+table.heading+"\n")
		if !ok {
			t.Fatalf("docs/sandbox.md has no %q section", table.heading)
		}
		section, _, _ = strings.Cut(section, "\n## ")
		var listed []string
		for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
			listed = append(listed, m[1])
		}
		// the official section's table lists both official tools tables: each is its rows, in order
		listed = slices.DeleteFunc(listed, func(n string) bool { return table.heading == "## The official gate" && !slices.Contains(table.want, n) })
		if !slices.Equal(listed, table.want) {
			t.Errorf("docs/sandbox.md's table under %q lists %v, the check table runs %v", table.heading, listed, table.want)
		}
	}
}

// TestSampleRunGateRowsReplay: judging the recorded sample run's candidates again gives its
// gate_results rows (check, passed, skipped, error; not the durations), row for row, once the
// errors are written as the Designer reads them (FailureText: seeds as their indices; the run was
// recorded when the gate's seeds were 0..N-1), and the same text for the Designer, which its
// regeneration prompts hold.
func TestSampleRunGateRowsReplay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(repoPath("testdata", "sample-run-v1"))); err != nil {
		t.Fatal(err)
	}
	store, err := lake.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	lk := lake.New(store, lake.NewCache(t.TempDir()))
	const run = "sample"
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := lk.Steps(ctx, run, schemas.GateResultsSpec.Name)
	if err != nil || len(steps) == 0 {
		t.Fatalf("sample run has no gate_results: %v", err)
	}
	pool := newPool(t, sandbox.IsolationBwrap)
	opts := CheckOptions{Setting: cfg.Setting, ResetSeeds: cfg.Gate.ResetSeeds, RunSeed: cfg.Seed}
	judged, rejected := 0, 0
	for _, step := range steps {
		rows, err := lake.ReadStep[schemas.GateResultRow](ctx, lk, run, schemas.GateResultsSpec.Name, step)
		if err != nil {
			t.Fatal(err)
		}
		cands, err := lake.ReadStep[schemas.CandidateRow](ctx, lk, run, schemas.CandidatesSpec.Name, step)
		if err != nil {
			t.Fatal(err)
		}
		type attempt struct {
			env string
			n   int32
		}
		recorded := map[attempt][]string{}
		var order []attempt
		for _, r := range rows {
			key := attempt{r.EnvID, r.Attempt}
			if recorded[key] == nil {
				order = append(order, key)
			}
			recorded[key] = append(recorded[key], rowText(r.Check, r.Passed, r.Skipped, r.Error))
		}
		byKey := map[attempt]schemas.CandidateRow{}
		for _, c := range cands {
			byKey[attempt{c.EnvID, c.Attempt}] = c
		}
		for _, key := range order {
			cand, ok := byKey[key]
			if !ok {
				t.Fatalf("step %d: gate_results of %v, which is no candidate", step, key)
			}
			v := judge(ctx, pool, cand, opts)
			var got []string
			for _, r := range v.Results {
				got = append(got, rowText(r.Check, r.Passed, r.Skipped, v.seedsAsIndices(r.Error)))
			}
			if !slices.Equal(got, recorded[key]) {
				t.Errorf("step %d, env %s attempt %d:\n got  %q\n want %q", step, key.env, key.n, got, recorded[key])
			}
			judged++
			if !v.Accepted {
				rejected++
			}
		}
	}
	if rejected == 0 || rejected == judged {
		t.Errorf("%d of %d attempts rejected: the sample run should hold both verdicts", rejected, judged)
	}
	t.Logf("%d candidate attempts judged again, %d rejected", judged, rejected)
}

func rowText(check string, passed, skipped bool, errText string) string {
	return fmt.Sprintf("%s passed=%t skipped=%t %s", check, passed, skipped, harnessLine.ReplaceAllString(errText, `File "<string>", line N,`))
}

// harnessLine matches a traceback frame of the sandbox's harness (the program's own frames are
// "<env>"): its line numbers move whenever the harness changes, which is not what the recording
// pins down.
var harnessLine = regexp.MustCompile(`File "<string>", line \d+,`)
