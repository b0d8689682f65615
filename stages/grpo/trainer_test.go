package grpo

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
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

// trainerPython finds an interpreter with torch and numpy: $SPADE_PYTHON, else python3, else
// /usr/bin/python3 (Debian's, which CI installs python3-torch into). Without one the test skips, except
// in CI (CI=true), where the trainer is a real part that must run.
func trainerPython(t *testing.T) string {
	t.Helper()
	candidates := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("SPADE_PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import torch, numpy").Run() == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no Python with torch and numpy among %v (apt-get install python3-torch python3-numpy, or set SPADE_PYTHON)", candidates)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// torchConfig is a run config for the tiny decoder: full fine-tuning, published by a command that
// records the version it was given.
func torchConfig(t *testing.T, python, root string) *config.Config {
	t.Helper()
	model := filepath.Join(root, "model")
	if err := os.MkdirAll(model, 0o755); err != nil {
		t.Fatal(err)
	}
	tiny := `{"vocab_size": 48, "hidden_size": 32, "num_layers": 2, "num_heads": 4, "intermediate_size": 64, "max_positions": 64}`
	if err := os.WriteFile(filepath.Join(model, "spade_tiny.json"), []byte(tiny), 0o644); err != nil {
		t.Fatal(err)
	}
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
