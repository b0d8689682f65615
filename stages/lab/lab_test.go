package lab

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/internal/testenv"
	"github.com/spadekit/spade/schemas"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// labPython is an interpreter with torch, numpy, jinja2 and regex (the server, the trainer and the
// chat-template helper); without one the test skips, except under CI.
func labPython(t *testing.T) string {
	t.Helper()
	candidates := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("SPADE_PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import torch, numpy, jinja2, regex").Run() == nil {
			return p
		}
	}
	testenv.SkipUnlessCI(t, "no Python with torch, numpy, jinja2 and regex among %v (set SPADE_PYTHON)", candidates)
	return ""
}

// TestLabClosesTheLoop runs five lab steps (a pool of four, its Designer update, and the next pool's
// generation) with a real tiny policy, the real gate and sandbox and the torch trainer, and checks the
// loop's instruments at every step: the Agent's importance weight in its update is 1 within 1e-4 (the
// server's log-probs are the trainer's), every call the server sampled and every llm_calls row carries
// the version the previous step published (the model's own name before the first), the server loaded
// exactly the file the trainer saved, and the rows are in the lake's lab_steps. Replayed offline, the run
// writes the same plays and training samples.
func TestLabClosesTheLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five steps of the whole loop; skipped with -short")
	}
	python := labPython(t)
	t.Setenv("SPADE_PYTHON", python)
	t.Setenv("SPADE_CACHE", t.TempDir())
	t.Chdir(t.TempDir()) // the trainer runs python -m from here: no stray package may shadow its own
	lk := laketest.New(t)
	ctx := context.Background()
	rows, err := Run(ctx, Options{Lake: lk, Run: "lab", Seed: 0, Steps: []int64{0, 1, 2, 3, 4}, WorkDir: t.TempDir(),
		Python: python, WarmSteps: 300})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("%d instrument rows, want 5", len(rows))
	}
	designerTrained := false
	for i, r := range rows {
		t.Log(StepLine(r))
		if math.IsNaN(r.AgentISWeight) || math.Abs(r.AgentISWeight-1) > 1e-4 {
			t.Errorf("step %d: Agent IS weight %v, want 1 within 1e-4", r.Step, r.AgentISWeight)
		}
		if !math.IsNaN(r.DesignerISWeight) {
			designerTrained = true
		}
		want := ModelName
		if i > 0 {
			want = rows[i-1].PublishedVersion
		}
		if r.ExpectedVersion != want {
			t.Errorf("step %d: expected version %q, want the previous step's publication %q", r.Step, r.ExpectedVersion, want)
		}
		if r.Calls == 0 || r.CallsOffVersion != 0 || r.RecordedOffVersion != 0 {
			t.Errorf("step %d: %d calls, %d served and %d recorded with another version than %q", r.Step, r.Calls,
				r.CallsOffVersion, r.RecordedOffVersion, want)
		}
		if r.PublishedVersion == "" || r.TrainerSHA256 == "" || r.TrainerSHA256 != r.ServerSHA256 {
			t.Errorf("step %d: published %q, trainer's sha256 %q, server's %q: want one version, both equal", r.Step,
				r.PublishedVersion, r.TrainerSHA256, r.ServerSHA256)
		}
		stored, err := lake.ReadStep[schemas.LabStepRow](ctx, lk, "lab", schemas.LabStepsSpec.Name, r.Step)
		if err != nil || len(stored) != 1 || stored[0].PublishedVersion != r.PublishedVersion || stored[0].CallsOffVersion != r.CallsOffVersion {
			t.Errorf("step %d: lab_steps holds %+v (%v), want the step's row", r.Step, stored, err)
		}
	}
	if !designerTrained {
		t.Error("no step trained the Designer: the test should reach a pool's end")
	}
	replayed(t, lk, "lab", []int64{0, 1, 2, 3, 4})
}

// replayed replays run's steps offline as a second run (both roles' base URLs replay:<run>, no trainer)
// and checks that every step's plays and training samples are the recorded ones.
func replayed(t *testing.T, lk *lake.Lake, run string, steps []int64) {
	t.Helper()
	ctx := context.Background()
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string]string{"llm.designer.base_url": "replay:" + run, "llm.agent.base_url": "replay:" + run, "grpo.trainer": "none"} {
		if err := cfg.Set(key, value); err != nil {
			t.Fatal(err)
		}
	}
	if err := lk.CreateRun(ctx, "replay", cfg); err != nil {
		t.Fatal(err)
	}
	env := &stage.Env{Lake: lk, Run: "replay", Config: cfg, Shard: shard.All, Resume: true}
	defer env.Close()
	if _, err := steprun.Run(ctx, env, steps, steprun.Options{Stages: steprun.Stages()}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	for _, step := range steps {
		for _, table := range []string{schemas.EpisodesSpec.Name, schemas.GRPOBatchesSpec.Name} {
			want, got := rowsOf(t, lk, run, table, step), rowsOf(t, lk, "replay", table, step)
			if len(want) == 0 || !slices.Equal(want, got) {
				t.Errorf("step %d, %s: the replay wrote %d rows unlike the %d recorded", step, table, len(got), len(want))
			}
		}
	}
}

// rowsOf is a step's rows of episodes or grpo_batches as sorted lines of the columns a replay must
// reproduce (timings aside).
func rowsOf(t *testing.T, lk *lake.Lake, run, table string, step int64) []string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	switch table {
	case schemas.EpisodesSpec.Name:
		rows, err := lake.ReadStep[schemas.EpisodeRow](ctx, lk, run, table, step)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			lines = append(lines, fmt.Sprint(r.EnvID, r.Hinted, r.Index, r.Seed, r.Return, r.Success, r.Turns, r.EndedBy))
		}
	default:
		rows, err := lake.ReadStep[schemas.GRPOBatchRow](ctx, lk, run, table, step)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			lines = append(lines, fmt.Sprint(r.SampleID, r.Role, r.PromptIDs, r.ResponseIDs, r.OldLogprobs, r.Advantage))
		}
	}
	slices.Sort(lines)
	return lines
}

// TestConfigurationDocListsTheLabKeys: docs/configuration.md, "The lab", lists every key the lab changes
// with its value, and the lab's configuration validates with each of them applied.
func TestConfigurationDocListsTheLabKeys(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(body), "## The lab\n")
	if !ok {
		t.Fatal(`docs/configuration.md has no "## The lab" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, o := range Overrides {
		if row := fmt.Sprintf("| `%s` | `%s` |", o.Key, o.Value); !strings.Contains(section, row) {
			t.Errorf("docs/configuration.md, \"The lab\", lacks the row %q", row)
		}
	}
	cfg, err := Config(3, "http://127.0.0.1:1", "/m", "/w", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Seed != 3 || cfg.GRPO.Trainer != "torch" || cfg.LLM.Agent.BaseURL != "http://127.0.0.1:1/v1" || cfg.GRPO.ModelPath != "/m" {
		t.Errorf("lab config: seed %d, trainer %q, agent URL %q, model path %q", cfg.Seed, cfg.GRPO.Trainer, cfg.LLM.Agent.BaseURL, cfg.GRPO.ModelPath)
	}
	for _, name := range AblationNames() {
		if _, err := Config(3, "http://127.0.0.1:1", "/m", "/w", name, "http://127.0.0.1:2"); err != nil {
			t.Errorf("ablation %s: %v", name, err)
		}
		if row := fmt.Sprintf("| `%s` |", name); !strings.Contains(section, row) {
			t.Errorf("docs/configuration.md, \"The lab\", lacks the ablation row %q", row)
		}
	}
	frozen, err := Config(3, "http://127.0.0.1:1", "/m", "/w", "frozen-designer", "http://127.0.0.1:2")
	if err != nil || !frozen.Ablation.FrozenDesigner || frozen.LLM.Designer.BaseURL != "http://127.0.0.1:2/v1" || frozen.LLM.Agent.BaseURL != "http://127.0.0.1:1/v1" {
		t.Errorf("frozen-designer: %v, designer at %q, agent at %q", err, frozen.LLM.Designer.BaseURL, frozen.LLM.Agent.BaseURL)
	}
	tried, err := Config(3, "http://127.0.0.1:1", "/m", "/w", "", "", "grpo.lr=0.003")
	if err != nil || tried.GRPO.LR != 0.003 {
		t.Errorf("--set grpo.lr=0.003: %v, lr %v", err, tried.GRPO.LR)
	}
	if _, err := Config(3, "http://127.0.0.1:1", "/m", "/w", "", "", "grpo.lr"); err == nil || !strings.Contains(err.Error(), "KEY=VALUE") {
		t.Errorf("--set without a value: %v, want an error asking for KEY=VALUE", err)
	}
	if _, err := Config(3, "http://127.0.0.1:1", "/m", "/w", "no-such", ""); err == nil || !strings.Contains(err.Error(), "no-memory") {
		t.Errorf("unknown ablation: %v, want an error listing the ablations", err)
	}
}

// TestDifficulty: a lab program's difficulty is its need plus 2 for a hidden goal; other code has none.
func TestDifficulty(t *testing.T) {
	for code, want := range map[string]float64{
		"        self.need = 3\n        self.shown = \"go \" + self.goal\n": 3,
		"        self.need = 1\n        self.shown = \"go somewhere\"\n":    3,
		"        self.need = 4\n        self.shown = \"go somewhere\"\n":    6,
	} {
		if got := Difficulty(code); got != want {
			t.Errorf("Difficulty(%q) = %v, want %v", code, got, want)
		}
	}
	if got := Difficulty("class Other: pass"); !math.IsNaN(got) {
		t.Errorf("Difficulty of a foreign program = %v, want NaN", got)
	}
}
