package pool_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/pool"
)

const gpt55Dir = "../../testdata/pools/gpt55"

func importGPT55(lk *lake.Lake, name, dir string) (pool.Result, error) {
	return pool.Import(context.Background(), lk, pool.Spec{Name: name, Setting: schemas.SettingGames, Format: schemas.PoolGPT55, Inputs: []string{dir}}, fakeCheck)
}

// TestImportGPT55 reads the authors' pool layout: every game, its skill (the authors' spellings), name,
// manifest fields and validation flag; the pool's allowlist on every row.
func TestImportGPT55(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	res, err := importGPT55(lk, "gpt55", gpt55Dir)
	if err != nil || res.Imported != 4 || len(res.Rejected) != 0 {
		t.Fatalf("import: %+v %v", res, err)
	}
	rows, err := pool.Read(ctx, lk, "gpt55")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		skill, name string
		validated   bool
	}{
		"game_000000": {schemas.SkillMath, "game_0000_mathematical_reasoning.py", true},
		"game_000001": {schemas.SkillPattern, "game_0001_pattern_recognition.py", true},
		"game_000002": {schemas.SkillOptimize, "game_0002_optimization.py", false},
		"game_000003": {schemas.SkillLogic, "game_0003_logical_deduction.py", true},
	}
	for _, r := range rows {
		w, ok := want[r.EntryID]
		if !ok || r.Skill != w.skill || r.Name != w.name || r.Validated != w.validated || r.Format != schemas.PoolGPT55 || r.Validate() != nil {
			t.Errorf("row %s: skill %q name %q validated %v format %q (%v)", r.EntryID, r.Skill, r.Name, r.Validated, r.Format, r.Validate())
		}
		var meta map[string]any
		if err := json.Unmarshal([]byte(r.Meta), &meta); err != nil || meta["source_run"] != "gpt55-test" || meta["line_count"] == nil {
			t.Errorf("row %s: meta %q (%v)", r.EntryID, r.Meta, err)
		}
		if !slices.Contains(r.AllowedImports, "math") || slices.Contains(r.AllowedImports, "networkx") {
			t.Errorf("row %s: allowed imports %v, want the default list", r.EntryID, r.AllowedImports)
		}
		body, _ := os.ReadFile(filepath.Join(gpt55Dir, "games", r.EntryID+".py"))
		if r.Code != string(body) {
			t.Errorf("row %s: code is not the game file", r.EntryID)
		}
	}
}

// TestImportGPT55RefusesBadDatasets: a game whose sum is wrong, one no checksum lists, a listed file
// that is missing, a game without a manifest entry, an unknown skill, a summary that is not JSON: each is
// one line naming the file, and nothing is committed.
func TestImportGPT55RefusesBadDatasets(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	for name, tc := range map[string]struct {
		spoil func(dir string)
		file  string // the file the error names, relative to the dataset
		says  string
	}{
		"changed game": {func(dir string) {
			os.WriteFile(filepath.Join(dir, "games", "game_000002.py"), []byte("class X:\n    pass\n"), 0o644)
		}, "games/game_000002.py", "sha256 is"},
		"unlisted game": {func(dir string) {
			os.WriteFile(filepath.Join(dir, "games", "game_000009.py"), []byte("class X:\n    pass\n"), 0o644)
		}, "games/game_000009.py", "not listed in checksums.sha256"},
		"missing game": {func(dir string) { os.Remove(filepath.Join(dir, "games", "game_000001.py")) }, "games/game_000001.py", "cannot be read"},
		"no manifest entry": {func(dir string) {
			rewrite(t, filepath.Join(dir, "manifest.jsonl"), func(s string) string { return s[:strings.LastIndex(strings.TrimRight(s, "\n"), "\n")+1] })
		}, "manifest.jsonl", "no entry for game_000003.py"},
		"unknown skill": {func(dir string) {
			rewrite(t, filepath.Join(dir, "manifest.jsonl"), func(s string) string { return strings.Replace(s, "Optimization", "Juggling", 1) })
		}, "manifest.jsonl", `skill "Juggling"`},
		"summary not JSON": {func(dir string) {
			rewrite(t, filepath.Join(dir, "validation_summary.json"), func(string) string { return "total: 4\n" })
		}, "validation_summary.json", "not a JSON object"},
		"no checksums": {func(dir string) { os.Remove(filepath.Join(dir, "checksums.sha256")) }, "checksums.sha256", "cannot read"},
	} {
		dir := laketest.CopyDir(t, gpt55Dir)
		tc.spoil(dir)
		if name != "changed game" && name != "unlisted game" && name != "missing game" && name != "no checksums" {
			resum(t, dir) // the manifest edits keep the checksums true, so the check under test is the manifest's
		}
		_, err := importGPT55(lk, "bad", dir)
		var inputErr *pool.InputError
		if !errors.As(err, &inputErr) || inputErr.File != filepath.Join(dir, tc.file) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := pool.Read(ctx, lk, "bad"); err == nil {
		t.Fatal("a refused import committed pool bad")
	}
}

// rewrite replaces a file's text by edit's result.
func rewrite(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(body))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// resum rewrites checksums.sha256 of a dataset copy for its current files.
func resum(t *testing.T, dir string) {
	t.Helper()
	rewrite(t, filepath.Join(dir, "checksums.sha256"), func(s string) string {
		var out strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
			_, path, _ := strings.Cut(line, "  ")
			body, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString(sha256Hex(body) + "  " + path + "\n")
		}
		return out.String()
	})
}

// TestImportRLVE wraps the testdata environments: one program per environment carrying its module and
// its controller's, the rlve allowlist (array, which one of them imports), an environment that imports a
// sibling module listed as rejected; an unknown identifier is an input error; an RLVE pool takes no other
// programs.
func TestImportRLVE(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	res := rlvePool(t, lk, "all")
	if res.Imported != 2 || len(res.Rejected) != 1 || res.Rejected[0].ID != "UsesSibling" || !strings.Contains(res.Rejected[0].Reason, "Gym.environments.sum_list") {
		t.Fatalf("import: %+v", res)
	}
	rows, err := pool.Read(ctx, lk, "rlve")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Format != schemas.PoolRLVE || r.Name != r.EntryID || !slices.Contains(r.AllowedImports, "array") || r.Validate() != nil {
			t.Errorf("row %+v (%v)", r, r.Validate())
		}
		if strings.Contains(r.Code, "from Gym") || !strings.Contains(r.Code, "class RLVE"+r.Name+"Env:") ||
			!strings.Contains(r.Code, "class "+r.Name+"_Environment(VerifiableEnvironment)") || !strings.Contains(r.Code, "class "+r.Name+"_ParameterController(ParameterController)") {
			t.Errorf("%s: the wrapper does not carry the environment and its controller:\n%s", r.Name, r.Code)
		}
		if _, err := pool.RLVEProgram(r.Code, 3, 77); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
	var inputErr *pool.InputError
	_, err = pool.Import(ctx, lk, pool.Spec{Name: "other", Setting: schemas.SettingGames, Format: schemas.PoolRLVE,
		Inputs: []string{"../../testdata/pools/rlve/Gym"}, RLVEEnvs: "SumList,Nope"}, fakeCheck)
	if !errors.As(err, &inputErr) || !strings.Contains(err.Error(), `"Nope"`) {
		t.Fatalf("unknown environment: %v", err)
	}
	if _, err := pool.Import(ctx, lk, pool.Spec{Name: "rlve", Setting: schemas.SettingGames, Inputs: []string{"../../testdata/pools/gpt55/games"}}, fakeCheck); !errors.As(err, &inputErr) || inputErr.File != "--format" {
		t.Fatalf("files into an RLVE pool: %v", err)
	}
	if _, err := pool.Import(ctx, lk, pool.Spec{Name: "x", Setting: schemas.SettingGames, Format: schemas.PoolRLVE, Inputs: []string{gpt55Dir}}, fakeCheck); !errors.As(err, &inputErr) || !strings.Contains(err.Error(), "Gym") {
		t.Fatalf("not a Gym checkout: %v", err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
