package grpo

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// TrainerKind names a Trainer implementation; the values are those of the grpo.trainer key.
type TrainerKind string

const (
	// TrainerNone records no update: batches are written, weights never move (data-only runs, tests).
	TrainerNone = TrainerKind(config.TrainerNone)
	// TrainerTorch runs the PyTorch trainer of stages/grpo/trainer (spade_trainer) as a subprocess.
	TrainerTorch = TrainerKind(config.TrainerTorch)
)

// Trainer turns one step's GRPO batch into a weight update.
type Trainer interface {
	// Train runs one update on rows (the step's whole grpo_batches partition; every row has Step == step)
	// and returns one train_metrics row per role it trained, in role order (agent, designer). A nil slice
	// with a nil error means nothing was trained (the none trainer). On error no metrics are returned and
	// the published weights are unchanged.
	Train(ctx context.Context, step int64, rows []schemas.GRPOBatchRow) ([]schemas.TrainMetricsRow, error)
}

// TrainerOptions is what every Trainer is built from.
type TrainerOptions struct {
	// Config is the run configuration (grpo.* keys, seed, llm.agent.base_url); required.
	Config *config.Config
	// Run names the run: it prefixes every weights version (<run>-stepNNNNNN) and the default
	// checkpoint directory (./checkpoints/<run>).
	Run string
	// WorkDir receives each step's batch file, trainer config and metrics (kept for inspection); empty
	// means a temporary directory removed after each step.
	WorkDir string
	// Log receives the trainer's log lines as they are written; nil discards them.
	Log io.Writer
	// Batches returns the committed grpo_batches rows of a step (nil when the step has none or is not
	// committed): the resident trainer re-trains the steps after its last full checkpoint from them. Nil
	// means no lake; a resident trainer behind its steps then fails naming them.
	Batches func(ctx context.Context, step int64) ([]schemas.GRPOBatchRow, error)
}

// trainers is the registry of Trainer implementations, keyed by grpo.trainer.
var trainers = map[TrainerKind]func(TrainerOptions) (Trainer, error){
	TrainerNone:  func(TrainerOptions) (Trainer, error) { return noneTrainer{}, nil },
	TrainerTorch: newTorchTrainer,
}

// TrainerKinds lists the registered trainer kinds, sorted.
func TrainerKinds() []TrainerKind {
	kinds := make([]TrainerKind, 0, len(trainers))
	for k := range trainers {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i] < kinds[j] })
	return kinds
}

// NewTrainer builds the Trainer named by the config's grpo.trainer key; an unknown name is an error that
// names the key and the valid values. The torch trainer under grpo.trainer_mode resident also implements
// io.Closer (Close writes its last full checkpoint and ends its process) and Publish(ctx, step) (the
// colocated placement's late publish).
func NewTrainer(opts TrainerOptions) (Trainer, error) {
	if opts.Config == nil {
		return nil, errors.New("grpo: trainer: no run config")
	}
	kind := TrainerKind(opts.Config.GRPO.Trainer)
	build, ok := trainers[kind]
	if !ok {
		names := make([]string, 0, len(trainers))
		for _, k := range TrainerKinds() {
			names = append(names, string(k))
		}
		return nil, fmt.Errorf("grpo: config key \"grpo.trainer\": unknown trainer %q (one of %s)", kind, strings.Join(names, ", "))
	}
	return build(opts)
}

type noneTrainer struct{}

func (noneTrainer) Train(context.Context, int64, []schemas.GRPOBatchRow) ([]schemas.TrainMetricsRow, error) {
	return nil, nil
}

//go:embed trainer/spade_trainer/*.py
var trainerSource embed.FS

// trainerModule is the Python module the torch trainer runs (python -m).
const trainerModule = "spade_trainer.train"

// torchTrainer runs spade_trainer with the configured interpreter, once per step.
type torchTrainer struct {
	opts   TrainerOptions
	python string
}

func newTorchTrainer(opts TrainerOptions) (Trainer, error) {
	g := opts.Config.GRPO
	if g.ModelPath == "" {
		return nil, errors.New("grpo: config key \"grpo.model_path\" is empty: the torch trainer needs a local model directory")
	}
	if g.TrainerGPUs < 1 {
		return nil, fmt.Errorf("grpo: config key \"grpo.trainer_gpus\" must be >= 1, got %d", g.TrainerGPUs)
	}
	if opts.Run == "" {
		return nil, errors.New("grpo: torch trainer: empty run name (it prefixes every weights version)")
	}
	t := &torchTrainer{opts: opts, python: Python(opts.Config)}
	if g.TrainerMode == config.TrainerResident {
		return &residentTrainer{torch: t}, nil
	}
	return t, nil
}

// Python returns the interpreter the trainer runs with: grpo.python, else $SPADE_PYTHON, else python3 on
// PATH, or Debian's when only that has numpy and torch (sandbox.ChoosePython, which logs the choice).
func Python(cfg *config.Config) string {
	if cfg != nil && cfg.GRPO.Python != "" {
		return cfg.GRPO.Python
	}
	if p := os.Getenv(sandbox.PythonEnv); p != "" {
		return p
	}
	return sandbox.ChoosePython(context.Background(), sandbox.TrainerModules).Name
}

// trainerConfig is the trainer's --config JSON, read by TrainConfig in trainer/spade_trainer/config.py:
// the one Go list of the trainer's keys. The trainer has no defaults and refuses a missing or an unknown
// key, so every field is filled by settings, from the run config or the step, and a key exists on both
// sides or on neither (TestTrainerConfigKeysMatchPython).
type trainerConfig struct {
	Step                  int64           `json:"step"`
	Seed                  int64           `json:"seed"`
	ModelPath             string          `json:"model_path"`
	CheckpointDir         string          `json:"checkpoint_dir"`
	LoRARank              int             `json:"lora_rank"`
	LoRAAlpha             float64         `json:"lora_alpha"`
	LR                    float64         `json:"lr"`
	WeightDecay           float64         `json:"weight_decay"`
	AdamBeta1             float64         `json:"adam_beta1"`
	AdamBeta2             float64         `json:"adam_beta2"`
	TIS                   string          `json:"tis"`
	TISCap                float64         `json:"tis_cap"`
	MaxGradNorm           float64         `json:"max_grad_norm"`
	ClipLow               float64         `json:"clip_low"`
	ClipHigh              float64         `json:"clip_high"`
	KLBeta                float64         `json:"kl_beta"`
	Agg                   string          `json:"agg"`
	MicroBatchTokens      int             `json:"micro_batch_tokens"`
	SampleMeanDenominator int             `json:"sample_mean_denominator"`
	GradientCheckpointing bool            `json:"gradient_checkpointing"`
	TrainerMode           string          `json:"trainer_mode"`
	SaveEvery             int             `json:"save_every"`
	ParamDType            string          `json:"param_dtype"`
	CPUOffload            string          `json:"cpu_offload"`
	Publish               publishSettings `json:"publish"`
}

// publishSettings is trainerConfig's publish object: how new weights reach the generation servers.
type publishSettings struct {
	Mode       string   `json:"mode"`
	BaseURL    string   `json:"base_url"`
	Command    string   `json:"command"`
	NamePrefix string   `json:"name_prefix"`
	URLs       []string `json:"urls"`
}

// metricsLine is one line of the trainer's metrics file.
type metricsLine struct {
	Role           string  `json:"role"`
	Loss           float64 `json:"loss"`
	KL             float64 `json:"kl"`
	ClipFrac       float64 `json:"clip_frac"`
	ClipFracLow    float64 `json:"clip_frac_low"`
	ClipFracHigh   float64 `json:"clip_frac_high"`
	RatioMean      float64 `json:"ratio_mean"`
	RatioMax       float64 `json:"ratio_max"`
	ISWeightMean   float64 `json:"is_weight_mean"`
	GradNorm       float64 `json:"grad_norm"`
	LR             float64 `json:"lr"`
	Tokens         int64   `json:"tokens"`
	Samples        int64   `json:"samples"`
	WeightsVersion string  `json:"weights_version"`
	Seconds        float64 `json:"seconds"`
	// UpdateSeconds, TokensPerSecond and PeakMemoryBytes describe the whole update, every role together
	// (the same on each line): its wall time, trained tokens per second of it, and the trainer process's
	// peak memory (allocated CUDA bytes on a GPU, peak resident set on CPU). The trainer logs them;
	// train_metrics stores the peak memory (its seconds are each role's own).
	UpdateSeconds   float64 `json:"update_seconds"`
	TokensPerSecond float64 `json:"tokens_per_second"`
	PeakMemoryBytes int64   `json:"peak_memory_bytes"`
	// IOReadBytes and IOWrittenBytes are the bytes the trainer read and wrote through read and write calls
	// for the update (/proc/self/io rchar and wchar, summed over ranks; 0 off Linux): the per-step
	// process's whole life (imports, model load, checkpoint), the resident trainer's one request.
	IOReadBytes    int64 `json:"io_read_bytes"`
	IOWrittenBytes int64 `json:"io_written_bytes"`
}

// settings is the trainer config of one step: paths made absolute, the publish server and replicas
// resolved, and the seq-mean denominator set from grpo.mix_roles.
func (t *torchTrainer) settings(step int64) (trainerConfig, error) {
	cfg := t.opts.Config
	g := cfg.GRPO
	checkpoints := g.CheckpointDir
	if checkpoints == "" {
		checkpoints = filepath.Join("checkpoints", t.opts.Run)
	}
	checkpoints, err := filepath.Abs(checkpoints)
	if err != nil {
		return trainerConfig{}, fmt.Errorf("grpo: checkpoint dir: %w", err)
	}
	modelPath, err := filepath.Abs(g.ModelPath)
	if err != nil {
		return trainerConfig{}, fmt.Errorf("grpo: model path: %w", err)
	}
	baseURL := g.PublishURL
	if agents := config.SplitList(cfg.LLM.Agent.BaseURL); baseURL == "" && len(agents) > 0 {
		baseURL = agents[0] // one server (config refuses a LoRA publish with several replicas); full weights go to urls
	}
	denominator := 0
	if g.MixRoles {
		denominator = g.GlobalBatch // one batch per step, padded to global_batch: slime's sum_of_sample_mean
	}
	urls := []string{} // a JSON list, never null: only the full-weight modes load into replicas
	if g.Publish.FullWeights() {
		urls = cfg.PublishURLs()
	}
	return trainerConfig{
		Step: step, Seed: cfg.Seed, ModelPath: modelPath, CheckpointDir: checkpoints,
		LoRARank: g.LoRARank, LoRAAlpha: g.LoRAAlpha, LR: g.LR, WeightDecay: g.WeightDecay,
		AdamBeta1: g.AdamBeta1, AdamBeta2: g.AdamBeta2, TIS: string(g.TIS), TISCap: g.TISCap,
		MaxGradNorm: g.MaxGradNorm, ClipLow: g.ClipLow, ClipHigh: g.ClipHigh, KLBeta: g.KLBeta, Agg: string(g.Agg),
		MicroBatchTokens: g.MicroBatchTokens, GradientCheckpointing: g.GradientCheckpointing, SampleMeanDenominator: denominator,
		TrainerMode: string(g.TrainerMode), SaveEvery: g.SaveEvery, ParamDType: string(g.ParamDType), CPUOffload: string(g.CPUOffload),
		Publish: publishSettings{Mode: string(g.Publish), BaseURL: baseURL, Command: g.PublishCommand, NamePrefix: t.opts.Run, URLs: urls},
	}, nil
}

// Train implements Trainer: it validates the rows, writes them with WriteBatchFile, runs
// `<python> -m spade_trainer.train` (under `-m torch.distributed.run` when grpo.trainer_gpus > 1) with
// the embedded trainer source on PYTHONPATH, streams its log to Log, and reads back its metrics. A
// failing trainer's error is the message it wrote, prefixed with the step.
func (t *torchTrainer) Train(ctx context.Context, step int64, rows []schemas.GRPOBatchRow) ([]schemas.TrainMetricsRow, error) {
	if err := checkRows(step, rows); err != nil {
		return nil, err
	}
	settings, err := t.settings(step)
	if err != nil {
		return nil, err
	}
	dir, cleanup, err := t.stepDir(step)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	pyDir := filepath.Join(dir, "py")
	if err := extractTrainer(pyDir); err != nil {
		return nil, err
	}
	batchPath := filepath.Join(dir, "batch.npz")
	if err := WriteBatchFile(batchPath, step, rows); err != nil {
		return nil, err
	}
	configPath := filepath.Join(dir, "trainer.json")
	body, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.WriteFile(configPath, body, 0o644); err != nil {
		return nil, fmt.Errorf("grpo: trainer: %w", err)
	}
	metricsPath := filepath.Join(dir, "metrics.jsonl")
	errorPath := filepath.Join(dir, "error.txt")
	_ = os.Remove(metricsPath)
	_ = os.Remove(errorPath)

	args := []string{"-m", trainerModule, "--batch", batchPath, "--config", configPath, "--metrics", metricsPath, "--error-file", errorPath}
	if n := t.opts.Config.GRPO.TrainerGPUs; n > 1 {
		// torchrun as a module of the same interpreter, so no separate torchrun binary must be on PATH.
		args = append([]string{"-m", "torch.distributed.run", "--standalone", "--nproc_per_node", strconv.Itoa(n)}, args...)
	}
	if err := t.run(ctx, step, pyDir, args, errorPath); err != nil {
		return nil, err
	}
	return readMetrics(metricsPath, step)
}

// checkRows refuses an empty batch, a row of another step and an invalid row, before any trainer runs.
func checkRows(step int64, rows []schemas.GRPOBatchRow) error {
	if len(rows) == 0 {
		return fmt.Errorf("grpo: trainer: step %d: the batch is empty (no grpo_batches rows)", step)
	}
	for i := range rows {
		if rows[i].Step != step {
			return fmt.Errorf("grpo: trainer: step %d: sample %s is from step %d", step, rows[i].SampleID, rows[i].Step)
		}
		if err := rows[i].Validate(); err != nil {
			return fmt.Errorf("grpo: trainer: step %d: %w", step, err)
		}
	}
	return nil
}

func (t *torchTrainer) stepDir(step int64) (string, func(), error) {
	if t.opts.WorkDir == "" {
		dir, err := os.MkdirTemp("", "spade-trainer-*")
		if err != nil {
			return "", nil, fmt.Errorf("grpo: trainer: %w", err)
		}
		return dir, func() { _ = os.RemoveAll(dir) }, nil
	}
	dir := filepath.Join(t.opts.WorkDir, fmt.Sprintf("step=%06d", step))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("grpo: trainer: %w", err)
	}
	return dir, func() {}, nil
}

// run starts the interpreter, streams its output to the log and turns a failure into the trainer's message.
func (t *torchTrainer) run(ctx context.Context, step int64, pyDir string, args []string, errorPath string) error {
	cmd := exec.CommandContext(ctx, t.python, args...)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONSAFEPATH=1", "PYTHONPATH="+joinPath(pyDir, os.Getenv("PYTHONPATH")))
	setProcessGroup(cmd)
	out := &tailWriter{to: t.opts.Log, limit: 4096}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("grpo: trainer: step %d: %w", step, ctx.Err())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fmt.Errorf("grpo: trainer: step %d: cannot run %s (set grpo.python or SPADE_PYTHON to an interpreter with torch and numpy): %w", step, t.python, err)
	}
	if msg, readErr := os.ReadFile(errorPath); readErr == nil && len(bytes.TrimSpace(msg)) > 0 {
		return fmt.Errorf("grpo: trainer: step %d: %s", step, bytes.TrimSpace(msg))
	}
	return fmt.Errorf("grpo: trainer: step %d: %s exited with %v: %s", step, t.python, err, strings.TrimSpace(out.tail()))
}

func joinPath(first, rest string) string {
	if rest == "" {
		return first
	}
	return first + string(os.PathListSeparator) + rest
}

// extractTrainer writes the embedded spade_trainer package under dir.
func extractTrainer(dir string) error {
	return fs.WalkDir(trainerSource, "trainer", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := trainerSource.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, strings.TrimPrefix(path, "trainer/"))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("grpo: trainer source: %w", err)
		}
		return os.WriteFile(target, body, 0o644)
	})
}

func readMetrics(path string, step int64) ([]schemas.TrainMetricsRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("grpo: trainer: step %d: no metrics: %w", step, err)
	}
	defer f.Close()
	var lines []metricsLine
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := bytes.TrimSpace(scanner.Bytes())
		if len(line) == 0 {
			continue
		}
		var m metricsLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("grpo: trainer: step %d: metrics line %q: %w", step, line, err)
		}
		lines = append(lines, m)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("grpo: trainer: step %d: metrics: %w", step, err)
	}
	return metricsRows(lines, step)
}

// metricsRows turns the trainer's metric lines into validated train_metrics rows; none is an error.
func metricsRows(lines []metricsLine, step int64) ([]schemas.TrainMetricsRow, error) {
	var rows []schemas.TrainMetricsRow
	for _, m := range lines {
		row := schemas.TrainMetricsRow{
			Step: step, Role: schemas.Role(m.Role), Loss: m.Loss, KL: m.KL, ClipFrac: m.ClipFrac, ClipFracLow: m.ClipFracLow,
			ClipFracHigh: m.ClipFracHigh, RatioMean: m.RatioMean, RatioMax: m.RatioMax, ISWeightMean: m.ISWeightMean,
			GradNorm: m.GradNorm, LR: m.LR, Tokens: m.Tokens, Samples: m.Samples, WeightsVersion: m.WeightsVersion,
			Seconds: m.Seconds, PeakMemoryBytes: m.PeakMemoryBytes,
		}
		if err := row.Validate(); err != nil {
			return nil, fmt.Errorf("grpo: trainer: step %d: %w", step, err)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("grpo: trainer: step %d: the trainer reported no metrics", step)
	}
	return rows, nil
}

// tailWriter forwards output to a log and keeps its last bytes for an error message.
type tailWriter struct {
	mu    sync.Mutex
	to    io.Writer
	limit int
	buf   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.to != nil {
		_, _ = w.to.Write(p)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.limit {
		w.buf = w.buf[len(w.buf)-w.limit:]
	}
	return len(p), nil
}

func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// BatchFileVersion is the version of the batch file format written by WriteBatchFile.
const BatchFileVersion = 2

// WriteBatchFile writes rows as the trainer's batch file: an .npz (a zip of .npy arrays, stored,
// little-endian) that numpy.load(path, allow_pickle=False) reads without pyarrow. With N rows:
//
//	format_version     int64   [1]      BatchFileVersion
//	step               int64   [1]      the training step
//	sample_id_utf8     uint8   [bytes]  UTF-8 of every sample_id, concatenated; sample_id_offsets int64 [N+1]
//	role_utf8          uint8   [bytes]  agent|designer, same layout;             role_offsets int64 [N+1]
//	batch              int32   [N]      global-batch number (one optimizer step per value)
//	prompt_ids         int32   [ΣP]     prompt token ids;                         prompt_offsets int64 [N+1]
//	response_ids       int32   [ΣR]     response token ids;                       response_offsets int64 [N+1]
//	old_logprobs       float32 [ΣR]     behaviour log-probs;                      old_logprobs_offsets int64 [N+1]
//	advantage          float64 [N]
//	is_weight          float64 [N]      used as is when is_cap is 0
//	is_cap             float64 [N]      > 0: the trainer recomputes min(is_cap, π_θ/π_behaviour)
//	loss_mask          uint8   [ΣR]     1: the response token is trained; 0: context only (version 2;
//	                                    response_offsets slice it; all 1 for a row without a loss_mask)
//	pad                uint8   [N]      1: an inert padding copy (version 2)
//
// Sample i's slice of a ragged column is flat[offsets[i]:offsets[i+1]]. The reader is
// stages/grpo/trainer/spade_trainer/batch.py, which documents the same format.
func WriteBatchFile(path string, step int64, rows []schemas.GRPOBatchRow) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("grpo: batch file: %w", err)
	}
	if err := writeBatch(f, step, rows); err != nil {
		f.Close()
		return fmt.Errorf("grpo: batch file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("grpo: batch file: %w", err)
	}
	return nil
}

func writeBatch(w io.Writer, step int64, rows []schemas.GRPOBatchRow) error {
	n := len(rows)
	var (
		sampleIDs, roles               []byte
		sampleOff, roleOff             = make([]int64, 1, n+1), make([]int64, 1, n+1)
		promptOff, responseOff, oldOff = make([]int64, 1, n+1), make([]int64, 1, n+1), make([]int64, 1, n+1)
		prompts, responses             []int32
		oldLogprobs                    []float32
		batchNo                        = make([]int32, n)
		advantage, isWeight, isCap     = make([]float64, n), make([]float64, n), make([]float64, n)
		lossMask                       []byte
		pad                            = make([]byte, n)
	)
	for i, r := range rows {
		sampleIDs = append(sampleIDs, r.SampleID...)
		sampleOff = append(sampleOff, int64(len(sampleIDs)))
		roles = append(roles, r.Role...)
		roleOff = append(roleOff, int64(len(roles)))
		prompts = append(prompts, r.PromptIDs...)
		promptOff = append(promptOff, int64(len(prompts)))
		responses = append(responses, r.ResponseIDs...)
		responseOff = append(responseOff, int64(len(responses)))
		oldLogprobs = append(oldLogprobs, r.OldLogprobs...)
		oldOff = append(oldOff, int64(len(oldLogprobs)))
		for j := range r.ResponseIDs {
			if r.Trained(j) {
				lossMask = append(lossMask, 1)
			} else {
				lossMask = append(lossMask, 0)
			}
		}
		if r.Pad {
			pad[i] = 1
		}
		batchNo[i] = r.Batch
		advantage[i], isWeight[i], isCap[i] = r.Advantage, r.ISWeight, r.ISCap
	}
	zw := zip.NewWriter(w)
	arrays := []struct {
		name  string
		descr string
		data  any
		count int
	}{
		{"format_version", "<i8", []int64{BatchFileVersion}, 1},
		{"step", "<i8", []int64{step}, 1},
		{"sample_id_utf8", "|u1", sampleIDs, len(sampleIDs)},
		{"sample_id_offsets", "<i8", sampleOff, len(sampleOff)},
		{"role_utf8", "|u1", roles, len(roles)},
		{"role_offsets", "<i8", roleOff, len(roleOff)},
		{"batch", "<i4", batchNo, n},
		{"prompt_ids", "<i4", prompts, len(prompts)},
		{"prompt_offsets", "<i8", promptOff, len(promptOff)},
		{"response_ids", "<i4", responses, len(responses)},
		{"response_offsets", "<i8", responseOff, len(responseOff)},
		{"old_logprobs", "<f4", oldLogprobs, len(oldLogprobs)},
		{"old_logprobs_offsets", "<i8", oldOff, len(oldOff)},
		{"advantage", "<f8", advantage, n},
		{"is_weight", "<f8", isWeight, n},
		{"is_cap", "<f8", isCap, n},
		{"loss_mask", "|u1", lossMask, len(lossMask)},
		{"pad", "|u1", pad, n},
	}
	for _, a := range arrays {
		entry, err := zw.CreateHeader(&zip.FileHeader{Name: a.name + ".npy", Method: zip.Store})
		if err != nil {
			return err
		}
		if err := writeNpy(entry, a.descr, a.count, a.data); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
	}
	return zw.Close()
}

// writeNpy writes a 1-d array in NumPy's .npy format version 1.0: magic, header length, a Python-literal
// header padded with spaces to a multiple of 64 bytes, then the raw little-endian data.
func writeNpy(w io.Writer, descr string, count int, data any) error {
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }", descr, count)
	const prefix = 10 // magic (6) + version (2) + header length (2)
	pad := (64 - (prefix+len(header)+1)%64) % 64
	header += strings.Repeat(" ", pad) + "\n"
	var head bytes.Buffer
	head.WriteString("\x93NUMPY\x01\x00")
	_ = binary.Write(&head, binary.LittleEndian, uint16(len(header)))
	head.WriteString(header)
	if _, err := w.Write(head.Bytes()); err != nil {
		return err
	}
	if raw, ok := data.([]byte); ok {
		_, err := w.Write(raw)
		return err
	}
	return binary.Write(w, binary.LittleEndian, data)
}
