package grpo

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/internal/testenv"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

func TestNewTrainerValidatesKind(t *testing.T) {
	cfg := config.Default()
	cfg.GRPO.Trainer = "jax"
	_, err := NewTrainer(TrainerOptions{Config: cfg, Run: "r"})
	if err == nil || !strings.Contains(err.Error(), `"grpo.trainer"`) || !strings.Contains(err.Error(), "none, torch") {
		t.Fatalf("want an error naming grpo.trainer and the kinds, got %v", err)
	}
	if got := TrainerKinds(); len(got) != 2 || got[0] != TrainerNone || got[1] != TrainerTorch {
		t.Fatalf("TrainerKinds() = %v", got)
	}
	cfg.GRPO.Trainer = config.TrainerTorch
	cfg.GRPO.ModelPath = ""
	if _, err := NewTrainer(TrainerOptions{Config: cfg, Run: "r"}); err == nil || !strings.Contains(err.Error(), "grpo.model_path") {
		t.Fatalf("torch without a model path: got %v", err)
	}
}

func TestNoneTrainerRecordsNothing(t *testing.T) {
	cfg := config.Default()
	cfg.GRPO.Trainer = config.TrainerNone
	tr, err := NewTrainer(TrainerOptions{Config: cfg, Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tr.Train(context.Background(), 1, sampleRows(1, 2, 0))
	if err != nil || rows != nil {
		t.Fatalf("none trainer: rows %v, err %v", rows, err)
	}
}

func TestPythonPrecedence(t *testing.T) {
	cfg := config.Default()
	t.Setenv("SPADE_PYTHON", "/opt/py/bin/python3")
	if got := Python(cfg); got != "/opt/py/bin/python3" {
		t.Fatalf("SPADE_PYTHON: got %q", got)
	}
	cfg.GRPO.Python = "/usr/bin/python3.11"
	if got := Python(cfg); got != "/usr/bin/python3.11" {
		t.Fatalf("grpo.python: got %q", got)
	}
	t.Setenv("SPADE_PYTHON", "")
	cfg.GRPO.Python = ""
	// Unset, python3 on PATH is taken when it has torch and numpy (here: a link to Debian's).
	dir := t.TempDir()
	if err := os.Symlink(sandbox.SystemPython, filepath.Join(dir, "python3")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	if got := Python(cfg); got != "python3" {
		t.Fatalf("default: got %q", got)
	}
}

// sampleRows returns agent and designer rows of one step over a 48-token vocabulary.
func sampleRows(step int64, agents, designers int) []schemas.GRPOBatchRow {
	var rows []schemas.GRPOBatchRow
	add := func(role schemas.Role, i int, isCap float64) {
		resp := []int32{int32(i % 48), int32((i*7 + 3) % 48), int32((i*11 + 5) % 48)}
		old := make([]float32, len(resp))
		for j := range old {
			old[j] = -3.8 - 0.01*float32(j)
		}
		adv := 1.0
		if i%2 == 1 {
			adv = -1.0
		}
		rows = append(rows, schemas.GRPOBatchRow{
			Step: step, Role: role, Batch: int32(i % 2), SampleID: fmt.Sprintf("%s-%d", role, i), EnvID: "env-1",
			PromptIDs: []int32{1, 2, int32(i%40 + 3)}, ResponseIDs: resp, OldLogprobs: old,
			Advantage: adv, ISWeight: 1, ISCap: isCap,
		})
	}
	for i := 0; i < agents; i++ {
		add(schemas.RoleAgent, i, 0)
	}
	for i := 0; i < designers; i++ {
		add(schemas.RoleDesigner, i, 2.0)
	}
	return rows
}

// readNpy is a minimal .npy reader for the round-trip test: it returns the header dict and the raw data.
func readNpy(t *testing.T, body []byte) (string, []byte) {
	t.Helper()
	if !bytes.HasPrefix(body, []byte("\x93NUMPY\x01\x00")) {
		t.Fatalf("bad magic %q", body[:8])
	}
	n := int(binary.LittleEndian.Uint16(body[8:10]))
	if (10+n)%64 != 0 || body[10+n-1] != '\n' {
		t.Fatalf("header of %d bytes is not padded to 64 with a newline", n)
	}
	return string(body[10 : 10+n]), body[10+n:]
}

func TestWriteBatchFileLayout(t *testing.T) {
	rows := sampleRows(3, 2, 1)
	rows[1].SampleID = "agent-ü" // multi-byte UTF-8
	path := filepath.Join(t.TempDir(), "b.npz")
	if err := WriteBatchFile(path, 3, rows); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	arrays := map[string][]byte{}
	headers := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(rc)
		rc.Close()
		name := strings.TrimSuffix(f.Name, ".npy")
		headers[name], arrays[name] = readNpy(t, body)
	}
	if len(arrays) != 18 {
		t.Fatalf("want 18 arrays, got %d", len(arrays))
	}
	if h := headers["response_offsets"]; !strings.Contains(h, "'descr': '<i8'") || !strings.Contains(h, "'shape': (4,)") {
		t.Fatalf("response_offsets header %q", h)
	}
	offsets := make([]int64, 4)
	_ = binary.Read(bytes.NewReader(arrays["sample_id_offsets"]), binary.LittleEndian, offsets)
	ids := arrays["sample_id_utf8"]
	if got := string(ids[offsets[1]:offsets[2]]); got != "agent-ü" {
		t.Fatalf("sample 1 id %q", got)
	}
	old := make([]float32, 9)
	_ = binary.Read(bytes.NewReader(arrays["old_logprobs"]), binary.LittleEndian, old)
	if old[3] != rows[1].OldLogprobs[0] {
		t.Fatalf("old_logprobs[3] = %v, want %v", old[3], rows[1].OldLogprobs[0])
	}
	caps := make([]float64, 3)
	_ = binary.Read(bytes.NewReader(arrays["is_cap"]), binary.LittleEndian, caps)
	if caps[2] != 2.0 || caps[0] != 0 {
		t.Fatalf("is_cap %v", caps)
	}
}

// trainerPython finds an interpreter with torch and numpy (pythonWith).
func trainerPython(t testing.TB) string {
	t.Helper()
	return pythonWith(t, "torch", "numpy")
}

// pythonWith finds an interpreter that imports modules: $SPADE_PYTHON, else python3, else
// /usr/bin/python3 (Debian's, which CI installs python3-torch into). Without one the test skips, except
// under CI (testenv.CI), where the trainer is a real part that must run.
func pythonWith(t testing.TB, modules ...string) string {
	t.Helper()
	candidates := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("SPADE_PYTHON"); p != "" {
		candidates = []string{p}
	}
	imports := "import sys"
	if len(modules) > 0 {
		imports = "import " + strings.Join(modules, ", ")
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", imports).Run() == nil {
			return p
		}
	}
	testenv.SkipUnlessCI(t, "no Python that can %q among %v (apt-get install python3-torch python3-numpy, or set SPADE_PYTHON)", imports, candidates)
	return ""
}

// writeTinyModel writes the trainer's tiny decoder (spade_tiny.json: hidden 32, 2 layers, 4 heads) with
// the given vocabulary and longest sequence into dir and returns dir.
func writeTinyModel(t testing.TB, dir string, vocab, maxPositions int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tiny := fmt.Sprintf(`{"vocab_size": %d, "hidden_size": 32, "num_layers": 2, "num_heads": 4, "intermediate_size": 64, "max_positions": %d}`,
		vocab, maxPositions)
	if err := os.WriteFile(filepath.Join(dir, "spade_tiny.json"), []byte(tiny), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readUpdatePerformance returns the whole-update figures of a step's metrics file in the trainer's work
// directory (the same on every line, so the first line's).
func readUpdatePerformance(t testing.TB, workDir string, step int64) metricsLine {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(workDir, fmt.Sprintf("step=%06d", step), "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var first metricsLine
	if err := json.Unmarshal(bytes.SplitN(body, []byte("\n"), 2)[0], &first); err != nil {
		t.Fatalf("metrics file: %v", err)
	}
	return first
}

// torchConfig is a run config for the tiny decoder: full fine-tuning in float32 by a trainer process per
// step, published by a command that records the version it was given.
func torchConfig(t *testing.T, python, root string) *config.Config {
	t.Helper()
	model := writeTinyModel(t, filepath.Join(root, "model"), 48, 64)
	cfg := config.Default()
	cfg.GRPO.Trainer = config.TrainerTorch
	cfg.GRPO.Python = python
	cfg.GRPO.ModelPath = model
	cfg.GRPO.CheckpointDir = filepath.Join(root, "ckpt")
	cfg.GRPO.LR = 1e-3
	cfg.GRPO.KLBeta = 0.01
	cfg.GRPO.LoRARank = 0
	cfg.GRPO.MicroBatchTokens = 24
	cfg.GRPO.Publish = "command"
	cfg.GRPO.TrainerMode, cfg.GRPO.ParamDType, cfg.GRPO.CPUOffload = config.TrainerPerStep, config.ParamFloat32, config.OffloadNone
	cfg.GRPO.Placement = config.PlacementSeparate
	marker := filepath.Join(root, "published.txt")
	cfg.GRPO.PublishCommand = fmt.Sprintf(`%s -c "import sys; open(sys.argv[1], 'w').write(sys.argv[2])" %s {version}`, python, marker)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestTorchTrainerEndToEnd(t *testing.T) {
	python := trainerPython(t)
	root := t.TempDir()
	cfg := torchConfig(t, python, root)
	var log bytes.Buffer
	tr, err := NewTrainer(TrainerOptions{Config: cfg, Run: "e2e", WorkDir: filepath.Join(root, "work"), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	rows := sampleRows(3, 4, 2)
	metrics, err := tr.Train(context.Background(), 3, rows)
	if err != nil {
		t.Fatalf("train: %v\nlog:\n%s", err, log.String())
	}
	if len(metrics) != 2 || metrics[0].Role != schemas.RoleAgent || metrics[1].Role != schemas.RoleDesigner {
		t.Fatalf("want agent and designer rows, got %+v", metrics)
	}
	for _, m := range metrics {
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		wantSamples := int64(4)
		if m.Role == schemas.RoleDesigner {
			wantSamples = 2
		}
		if m.Step != 3 || m.Samples != wantSamples || m.Tokens != 3*wantSamples || m.WeightsVersion != "e2e-step000003" || m.LR != 1e-3 {
			t.Errorf("row %+v", m)
		}
		if !(m.GradNorm > 0) || m.ISWeightMean <= 0 || m.ISWeightMean > 2.0 {
			t.Errorf("row %s: grad norm %v, IS weight mean %v", m.Role, m.GradNorm, m.ISWeightMean)
		}
		// Global batch 1 is trained after batch 0's step, so the policy has left the reference.
		if !(m.KL > 0) || m.ClipFrac != m.ClipFracLow+m.ClipFracHigh {
			t.Errorf("row %s: kl %v, clip %v != %v + %v", m.Role, m.KL, m.ClipFrac, m.ClipFracLow, m.ClipFracHigh)
		}
	}
	// The trainer reports the update's throughput and peak memory (kept out of train_metrics).
	perf := readUpdatePerformance(t, filepath.Join(root, "work"), 3)
	if !(perf.UpdateSeconds > 0) || !(perf.PeakMemoryBytes > 1<<20) ||
		math.Abs(perf.TokensPerSecond*perf.UpdateSeconds-float64(metrics[0].Tokens+metrics[1].Tokens)) > 1e-6*perf.TokensPerSecond {
		t.Errorf("update performance %+v for %d trained tokens", perf, metrics[0].Tokens+metrics[1].Tokens)
	}
	// The interpreter ran the package embedded in this binary, __init__.py included.
	if _, err := os.Stat(filepath.Join(root, "work", "step=000003", "py", "spade_trainer", "__init__.py")); err != nil {
		t.Fatalf("embedded trainer source: %v", err)
	}
	published, err := os.ReadFile(filepath.Join(root, "published.txt"))
	if err != nil || string(published) != "e2e-step000003" {
		t.Fatalf("publish command saw %q (%v)", published, err)
	}
	if !strings.Contains(log.String(), "spade-trainer: step 3: published e2e-step000003") {
		t.Fatalf("trainer log not streamed:\n%s", log.String())
	}
	var latest struct {
		Version string `json:"version"`
		Step    int64  `json:"step"`
	}
	body, _ := os.ReadFile(filepath.Join(root, "ckpt", "latest.json"))
	if err := json.Unmarshal(body, &latest); err != nil || latest.Version != "e2e-step000003" {
		t.Fatalf("latest.json %s (%v)", body, err)
	}
}

func TestTorchTrainerFailsWithTheTrainersMessage(t *testing.T) {
	python := trainerPython(t)
	root := t.TempDir()
	cfg := torchConfig(t, python, root)
	tr, err := NewTrainer(TrainerOptions{Config: cfg, Run: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	rows := sampleRows(5, 3, 0)
	rows[2].ResponseIDs[1] = 1000 // beyond the 48-token vocabulary
	_, err = tr.Train(context.Background(), 5, rows)
	if err == nil || !strings.Contains(err.Error(), "step 5") || !strings.Contains(err.Error(), "'agent-2'") ||
		!strings.Contains(err.Error(), "id 1000, outside the vocabulary [0, 48)") {
		t.Fatalf("want the trainer's message naming the sample, got %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(root, "ckpt", "latest.json")); !os.IsNotExist(statErr) {
		t.Fatalf("a failed update published weights")
	}
}

func TestTorchTrainerRejectsInvalidRowsBeforeRunning(t *testing.T) {
	cfg := config.Default()
	cfg.GRPO.Trainer = config.TrainerTorch
	cfg.GRPO.ModelPath = t.TempDir()
	cfg.GRPO.Python = "/nonexistent/python" // never started
	tr, err := NewTrainer(TrainerOptions{Config: cfg, Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Train(context.Background(), 1, nil); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty batch: %v", err)
	}
	rows := sampleRows(1, 2, 0)
	rows[1].OldLogprobs = rows[1].OldLogprobs[:2]
	if _, err := tr.Train(context.Background(), 1, rows); err == nil || !strings.Contains(err.Error(), "agent-1") {
		t.Fatalf("mismatched lengths: %v", err)
	}
	rows = sampleRows(2, 2, 0)
	if _, err := tr.Train(context.Background(), 1, rows); err == nil || !strings.Contains(err.Error(), "from step 2") {
		t.Fatalf("wrong step: %v", err)
	}
	rows = sampleRows(1, 1, 0)
	_, err = tr.Train(context.Background(), 1, rows)
	if err == nil || !strings.Contains(err.Error(), "cannot run /nonexistent/python") {
		t.Fatalf("missing interpreter: %v", err)
	}
}

// recordPlays writes one step of a recorded rollout of env0 as the rollout stage writes it: play p has
// the given number of turns and returns[p]; each call's prompt is the previous prompt and completion
// followed by two template tokens; token ids lie in the tiny model's 48-token vocabulary and the rollout
// log-probs are −3.9 (about the untrained model's −ln 48). The plays are the same at every step and in
// every run; only those listed in chosen are written.
func recordPlays(t testing.TB, lk *lake.Lake, run string, step int64, returns []float64, chosen []int, turnsPerPlay int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 9))
	tok := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = rng.Int32N(48)
		}
		return out
	}
	var episodes []schemas.EpisodeRow
	var turns []schemas.TurnRow
	var calls []schemas.LLMCallRow
	for play, ret := range returns {
		id := fmt.Sprintf("play%d", play)
		var playTurns []schemas.TurnRow
		var playCalls []schemas.LLMCallRow
		history := tok(4)
		for turn := 0; turn < turnsPerPlay; turn++ {
			if turn > 0 {
				history = append(history, tok(2)...)
			}
			completion := tok(3)
			lp := []float32{-3.9, -3.9, -3.9}
			callID := fmt.Sprintf("s%d-%s-t%d", step, id, turn)
			playCalls = append(playCalls, schemas.LLMCallRow{Step: step, CallID: callID, Role: schemas.RoleAgent, Request: "{}", ResponseText: "x",
				PromptTokenIDs: append([]int32(nil), history...), CompletionTokenIDs: completion, CompletionLogprobs: lp,
				PromptTokens: int64(len(history)), CompletionTokens: int64(len(completion))})
			playTurns = append(playTurns, schemas.TurnRow{Step: step, EpisodeID: id, Turn: int32(turn), CallID: callID})
			history = append(history, completion...)
		}
		if !slices.Contains(chosen, play) {
			continue // drawn all the same, so every play has the same tokens whichever are written
		}
		calls, turns = append(calls, playCalls...), append(turns, playTurns...)
		episodes = append(episodes, schemas.EpisodeRow{Step: step, EpisodeID: id, EnvID: "env0", Index: int32(play),
			Return: ret, EndedBy: schemas.EndedDone, Turns: int32(turnsPerPlay)})
	}
	key := func(table string) lake.PartitionKey { return lake.PartitionKey{Run: run, Table: table, Step: step} }
	laketest.Write(t, lk, key(schemas.EpisodesSpec.Name), episodes)
	laketest.Write(t, lk, key(schemas.TurnsSpec.Name), turns)
	laketest.Write(t, lk, lake.PartitionKey{Run: run, Table: schemas.LLMCallsSpec.Name, Step: step, Fragment: "rollout"}, calls)
}

// The grpo stage with the torch trainer on the episode samples of a recorded rollout, full fine-tuning
// under the authors' update (one mixed batch padded to 8, token-level TIS, seq-mean-token-mean): step 1
// trains on two won and two lost plays. The direction is read from the trainer's own IS weight: with
// token TIS it is the mean over trained tokens of min(2, π_θ/π_rollout) at the start of an update, and
// the rollout log-probs are all equal, so it rises and falls with the probability of the plays' tokens.
// Later steps replay only the winners (step 2) or only the losers (step 3): their equal returns give
// advantage 0, so they measure without training; fresh runs measure the same plays under the initial
// weights.
func TestTorchTrainerLearnsFromEpisodeSamplesOfARecordedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the tiny model over several runs; skipped with -short")
	}
	python := trainerPython(t)
	root := t.TempDir()
	ctx := context.Background()
	lk := laketest.Open(t, filepath.Join(root, "lake"))
	returns := []float64{1, 0, 1, 0}
	winners, losers := []int{0, 2}, []int{1, 3}
	// isWeight runs the stage at each step of a new run on the given plays and returns each step's IS weight.
	isWeight := func(run string, plays ...[]int) []float64 {
		cfg := torchConfig(t, python, filepath.Join(root, run))
		cfg.Sample.RefreshEvery = 8 // no pool ends: Agent samples only
		cfg.GRPO.SampleUnit, cfg.GRPO.MixRoles, cfg.GRPO.AdvStd, cfg.GRPO.GlobalBatch = config.SampleEpisode, true, config.AdvStdPopulation, 8
		cfg.GRPO.TIS, cfg.GRPO.Agg, cfg.GRPO.KLBeta, cfg.GRPO.LoRARank = config.TISToken, config.AggSeqMeanTokenMean, 0, 0
		cfg.GRPO.BatchFill = config.FillPad // the short batch padded, not filled with copies: the weights below are the real plays'
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		laketest.NewRun(t, lk, run, cfg)
		var weights []float64
		for i, chosen := range plays {
			step := int64(i + 1)
			recordPlays(t, lk, run, step, returns, chosen, 3)
			env := testEnv(t, lk, run, shard.All)
			var log bytes.Buffer
			env.TrainerLog = &log
			res, err := stage.Within(ctx, env, stage.GRPO, step, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, nil) })
			if err != nil {
				t.Fatalf("%s step %d: %v\nlog:\n%s", run, step, err, log.String())
			}
			if !res.Trained || res.AgentSamples != len(chosen) || res.PadSamples != 8-len(chosen) || res.Batches != 1 || len(res.Metrics) != 1 {
				t.Fatalf("%s step %d: %+v", run, step, res)
			}
			m := res.Metrics[0]
			// Every play is one sample: 3 completions of 3 trained tokens; template tokens and pads train nothing.
			if m.Samples != int64(len(chosen)) || m.Tokens != int64(len(chosen)*3*3) || m.WeightsVersion != fmt.Sprintf("%s-step%06d", run, step) {
				t.Fatalf("%s step %d: metrics %+v", run, step, m)
			}
			weights = append(weights, m.ISWeightMean)
		}
		return weights
	}
	trained := isWeight("r", []int{0, 1, 2, 3}, winners, losers)
	winnersBefore, losersBefore := isWeight("w0", winners)[0], isWeight("l0", losers)[0]
	t.Logf("IS weight of the winners %.6g → %.6g, of the losers %.6g → %.6g", winnersBefore, trained[1], losersBefore, trained[2])
	if !(trained[1] > winnersBefore) || !(trained[2] < losersBefore) {
		t.Fatalf("the update did not follow the advantages: winners' tokens %.6g → %.6g, losers' %.6g → %.6g",
			winnersBefore, trained[1], losersBefore, trained[2])
	}
	if trained[1] >= 2 {
		t.Fatalf("the winners' weight reached the cap (%v): the test measures nothing", trained[1])
	}
}

// A spade_trainer folder in the caller's working directory does not replace the embedded trainer:
// `python -m` would put the working directory first on sys.path, and PYTHONSAFEPATH keeps it off.
func TestTrainerIgnoresASpadeTrainerFolderInTheWorkingDirectory(t *testing.T) {
	python := trainerPython(t)
	root := t.TempDir()
	cfg := torchConfig(t, python, root)
	decoy := filepath.Join(root, "cwd", "spade_trainer")
	if err := os.MkdirAll(decoy, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"__init__.py", "train.py"} {
		if err := os.WriteFile(filepath.Join(decoy, f), []byte("raise SystemExit('the decoy trainer ran')\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(filepath.Dir(decoy))
	var log bytes.Buffer
	tr, err := NewTrainer(TrainerOptions{Config: cfg, Run: "cwd", WorkDir: filepath.Join(root, "work"), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Train(context.Background(), 1, sampleRows(1, 2, 0)); err != nil || strings.Contains(log.String(), "decoy trainer") {
		t.Fatalf("train from a directory holding a spade_trainer folder: %v\n%s", err, log.String())
	}
}
