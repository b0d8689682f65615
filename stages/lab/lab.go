// Package lab runs SPADE's whole loop on a CPU with a real tiny policy (`spade lab`): a decoder served
// the way SGLang serves a model (python/spade_lab_server.py), trained by the grpo stage's torch trainer
// and published back to the server after every step, playing a world whose programs are written from a
// few code-fragment tokens. After each step it records the instruments that say whether the loop is
// closed (table lab_steps): the Agent's importance weight in its update, the weights version every
// call was served with, and the checksums of the weights the trainer saved and the server loaded.
package lab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/chattemplate"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/corpus"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/grpo"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

//go:embed python/spade_lab_server.py prompts/*.tmpl corpus.jsonl
var files embed.FS

// ModelName is the name the lab server serves its policy under.
const ModelName = "spade-lab"

// CorpusName is the corpus the lab imports its documents under.
const CorpusName = "lab"

// Override is one key the lab changes from the preset it starts from, with the reason.
type Override struct {
	Key, Value, Why string
}

// BasePreset is the preset whose method the lab runs.
const BasePreset = "qwen3-4b-games"

// Overrides are the lab's changes to BasePreset: sizes and lengths a CPU needs, the tiny policy's
// sampling, and where its files are. {model}, {server} and {work} are filled in by Config.
// docs/configuration.md lists the same keys.
var Overrides = []Override{
	{"sample.envs_per_step", "4", "4 envs per step instead of 24"},
	{"sample.corpus", CorpusName, "the lab's own small corpus"},
	{"llm.designer.max_tokens", "8", "a lab program is 6 tokens and EOS"},
	{"llm.agent.max_tokens", "4", "a lab move is one token and EOS"},
	{"llm.designer.temperature", "1", "the trainer's log-probs are of the untempered distribution"},
	{"llm.agent.temperature", "1", "the trainer's log-probs are of the untempered distribution"},
	{"llm.designer.top_p", "1", "no truncation: the sampled distribution is the trained one"},
	{"llm.agent.top_p", "1", "no truncation: the sampled distribution is the trained one"},
	{"llm.designer.top_k", "0", "no truncation: the sampled distribution is the trained one"},
	{"llm.agent.top_k", "0", "no truncation: the sampled distribution is the trained one"},
	{"llm.designer.model", ModelName, "the lab server's model"},
	{"llm.agent.model", ModelName, "the lab server's model"},
	{"llm.designer.base_url", "{server}/v1", "the lab server"},
	{"llm.agent.base_url", "{server}/v1", "the lab server"},
	{"llm.prompt_file", "{work}/prompts/designer.tmpl", "the lab world's short Designer prompt"},
	{"generate.hint_prompt_file", "{work}/prompts/hint.tmpl", "the lab world's short hint prompt"},
	{"generate.hint_max_tokens", "4", "a lab hint is one token and EOS"},
	{"rollout.prompt_file", "{work}/prompts/agent.tmpl", "the lab world's short Agent prompt"},
	{"rollout.group_size", "4", "4 unhinted plays per env instead of 8"},
	{"rollout.hinted_group_size", "4", "4 hinted plays per env instead of 16"},
	{"rollout.max_turns", "6", "the lab programs end by 6 turns"},
	{"rollout.context_tokens", "512", "the tiny decoder's positions"},
	{"rollout.chat_template_dir", "{model}", "the tiny policy's chat template and tokenizer"},
	{"grpo.global_batch", "16", "4 envs x 4 plays instead of 192"},
	{"grpo.lr", "0.001", "a tiny decoder learns at a larger rate than an 8B model"},
	{"grpo.trainer", "torch", "the loop closes: every step is trained"},
	{"grpo.publish", "sglang", "every step's weights are loaded into the lab server"},
	{"grpo.publish_urls", "{server}", "the lab server"},
	{"grpo.model_path", "{model}", "the tiny policy's directory"},
	{"grpo.checkpoint_dir", "{work}/checkpoints", "the lab's work directory"},
	{"grpo.gradient_checkpointing", "false", "nothing to save on a tiny decoder"},
	{"grpo.placement", "separate", "the lab server holds no GPU memory to release around an update"},
	{"grpo.param_dtype", "float32", "the server samples in float32, so the Agent's IS weight is 1 only if the trainer computes in float32 too"},
}

// Ablations are the paper's ablations `spade lab --ablation NAME` runs, each as the keys it sets.
// frozen-designer also gives the Designer (and the hint writer, which calls its model) a second server
// that keeps the initial weights, since the lab server loads every publication under the same name.
var Ablations = map[string][]Override{
	"no-memory":          {{"ablation.no_memory", "true", "the Designer sees no memory"}},
	"no-corpus":          {{"ablation.no_corpus", "true", "the Designer sees no document"}},
	"frozen-designer":    {{"ablation.frozen_designer", "true", "the Designer keeps the initial weights"}, {"llm.designer.base_url", "{frozen}/v1", "a server that is never published to"}},
	"no-designer-grad":   {{"ablation.no_designer_grad", "true", "the Designer's samples are not trained"}},
	"learning-potential": {{"regret.variant", "ema_lp", "the Designer is paid the learning potential"}},
}

// AblationNames lists Ablations' names, sorted.
func AblationNames() []string {
	names := make([]string, 0, len(Ablations))
	for name := range Ablations {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Config is the lab run's configuration: BasePreset with Overrides, the seed, the server at server,
// the model directory model and the work directory work (absolute paths).
//
// With ablation (a key of Ablations; "" for the full method) its keys are set too, {frozen} being the
// frozen Designer's server.
//
// sets are KEY=VALUE settings applied last (`spade lab --set`), to try a change in the lab world.
func Config(seed int64, server, model, work, ablation, frozen string, sets ...string) (*config.Config, error) {
	cfg, err := config.Preset(BasePreset)
	if err != nil {
		return nil, err
	}
	cfg.Seed = seed
	extra, ok := Ablations[ablation]
	if !ok && ablation != "" {
		return nil, fmt.Errorf("lab: unknown ablation %q (one of %s)", ablation, strings.Join(AblationNames(), ", "))
	}
	fill := strings.NewReplacer("{server}", server, "{model}", model, "{work}", work, "{frozen}", frozen)
	for _, o := range append(append([]Override(nil), Overrides...), extra...) {
		if err := cfg.Set(o.Key, fill.Replace(o.Value)); err != nil {
			return nil, fmt.Errorf("lab: %s: %w", o.Key, err)
		}
	}
	for _, kv := range sets {
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("lab: --set %q: want KEY=VALUE", kv)
		}
		if err := cfg.Set(key, value); err != nil {
			return nil, fmt.Errorf("lab: --set %s: %w", key, err)
		}
	}
	cfg.Preset = "lab"
	return cfg, cfg.Validate()
}

// Options are what Run needs.
type Options struct {
	// Lake and Run name the lab run (created when absent).
	Lake *lake.Lake
	Run  string
	// Seed is the run's seed (the policy's initialisation, the warm start and every sample).
	Seed int64
	// Ablation names one of Ablations ("" runs the full method).
	Ablation string
	// Sets are KEY=VALUE settings applied after the lab's (see Config).
	Sets []string
	// Steps are the steps to run, ascending.
	Steps []int64
	// WorkDir holds the model, the checkpoints, the prompts, the Python sources and the server's call
	// log; created when absent.
	WorkDir string
	// Python is the interpreter with torch (grpo.Python's choice when empty).
	Python string
	// WarmSteps is the supervised warm start's length when the model is first made.
	WarmSteps int
	// Out receives one line per step; Log the stages' progress; TrainerLog the trainer's and the
	// server's output.
	Out        io.Writer
	Log        *slog.Logger
	Progress   *progress.Reporter
	TrainerLog io.Writer
}

// Run runs the lab: the model made (once), the server started on it (loading the newest published
// version when resuming), the run created, then every step's stages with the instruments written after
// each. The server stops when Run returns.
func Run(ctx context.Context, o Options) ([]schemas.LabStepRow, error) {
	work, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return nil, err
	}
	if o.Python == "" {
		o.Python = grpo.Python(nil)
	}
	if o.TrainerLog == nil {
		o.TrainerLog = io.Discard
	}
	py := filepath.Join(work, "py")
	model := filepath.Join(work, "model")
	if err := writeSources(work, py); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(model, "model.pt")); err != nil {
		cmd := exec.CommandContext(ctx, o.Python, filepath.Join(py, "spade_lab_server.py"), "init", model,
			"--seed", strconv.FormatInt(o.Seed, 10), "--warm-steps", strconv.Itoa(o.WarmSteps))
		cmd.Env = append(os.Environ(), "PYTHONPATH="+py)
		cmd.Stderr = o.TrainerLog
		if out, err := cmd.Output(); err != nil {
			return nil, fmt.Errorf("lab: making the model in %s: %w", model, err)
		} else {
			fmt.Fprintf(o.TrainerLog, "lab: model: %s", out)
		}
	}
	if _, ok := Ablations[o.Ablation]; !ok && o.Ablation != "" {
		return nil, fmt.Errorf("lab: unknown ablation %q (one of %s)", o.Ablation, strings.Join(AblationNames(), ", "))
	}
	srv, err := StartServer(ctx, o.Python, py, model, filepath.Join(work, "calls.jsonl"), o.TrainerLog)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	frozen := ""
	if o.Ablation == "frozen-designer" {
		// Its calls are logged apart: they are served by the initial weights at every step.
		fsrv, err := StartServer(ctx, o.Python, py, model, filepath.Join(work, "frozen-calls.jsonl"), o.TrainerLog)
		if err != nil {
			return nil, err
		}
		defer fsrv.Stop()
		frozen = fsrv.URL
	}
	cfg, err := Config(o.Seed, srv.URL, model, work, o.Ablation, frozen, o.Sets...)
	if err != nil {
		return nil, err
	}
	if err := ensureRun(ctx, o.Lake, o.Run, cfg, work); err != nil {
		return nil, err
	}
	published := cfg.LLM.Agent.Model
	if latest, ok := readLatest(cfg.GRPO.CheckpointDir); ok {
		if err := srv.Load(filepath.Join(cfg.GRPO.CheckpointDir, latest)); err != nil {
			return nil, err
		}
		published = latest
	}
	env := &stage.Env{Lake: o.Lake, Run: o.Run, Config: cfg, Shard: shard.All, Log: o.Log, Progress: o.Progress,
		TrainerLog: o.TrainerLog, TrainerDir: filepath.Join(work, "trainer"), Resume: true}
	defer env.Close()
	var rows []schemas.LabStepRow
	ro := steprun.Options{Stages: steprun.Stages(), Log: o.Log, StepLines: o.Out}
	ro.AfterStep = func(ctx context.Context, s steprun.StepSummary) error {
		calls := srv.TakeCalls()
		row, err := measure(ctx, o.Lake, o.Run, cfg, s, published, calls, srv)
		if err != nil {
			return err
		}
		if row.PublishedVersion != "" {
			published = row.PublishedVersion
		}
		if _, err := lake.CommitRows(ctx, o.Lake, lake.TxnSpec{Run: o.Run, Stage: "lab", Step: s.Step, Force: true},
			lake.PartitionKey{Run: o.Run, Table: schemas.LabStepsSpec.Name, Step: s.Step}, []schemas.LabStepRow{row}, lake.WriteOptions{}); err != nil {
			return err
		}
		rows = append(rows, row)
		if o.Out != nil {
			fmt.Fprintln(o.Out, StepLine(row))
		}
		return nil
	}
	if _, err := steprun.Run(ctx, env, o.Steps, ro); err != nil {
		return rows, err
	}
	return rows, nil
}

// StepLine is a step's instruments on one line.
func StepLine(r schemas.LabStepRow) string {
	return fmt.Sprintf("lab step %d: agent IS weight %.6f, designer IS weight %.4f, %d calls (%d off version %s), published %s (sha256 trainer %.12s server %.12s), difficulty %.2f, solve rate %.3f / hinted %.3f, %.1fs",
		r.Step, r.AgentISWeight, r.DesignerISWeight, r.Calls, r.CallsOffVersion, r.ExpectedVersion, r.PublishedVersion,
		r.TrainerSHA256, r.ServerSHA256, r.MeanDifficulty, r.SolveRate, r.HintedSolveRate, r.Seconds)
}

// writeSources writes the Python sources (the server, the trainer's package, the chat-template helper)
// and the prompt templates under work.
func writeSources(work, py string) error {
	if err := grpo.ExtractTrainerSource(py); err != nil {
		return err
	}
	put := func(path string, body []byte) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, body, 0o644)
	}
	if err := put(filepath.Join(py, "chattemplate.py"), chattemplate.HelperSource()); err != nil {
		return err
	}
	for _, name := range []string{"python/spade_lab_server.py", "prompts/designer.tmpl", "prompts/hint.tmpl", "prompts/agent.tmpl"} {
		body, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		dest := filepath.Join(work, name)
		if strings.HasPrefix(name, "python/") {
			dest = filepath.Join(py, filepath.Base(name))
		}
		if err := put(dest, body); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return nil
}

// ensureRun creates the run (and imports the lab corpus) unless it exists. An existing run must have
// been made with the same settings, its servers' addresses aside (they change with every start).
func ensureRun(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, work string) error {
	if stored, err := lk.RunConfig(ctx, run); err == nil {
		for _, change := range config.Diff(stored, cfg) {
			if !strings.HasSuffix(change.Key, "base_url") && change.Key != "grpo.publish_urls" {
				return fmt.Errorf("lab: run %s was made with %s = %q, this call asks for %q: resume it with its own --seed, --ablation and --set, or pass another --run",
					run, change.Key, change.A, change.B)
			}
		}
		return nil
	} else if !errors.Is(err, lake.ErrNoRun) {
		return err
	}
	body, err := files.ReadFile("corpus.jsonl")
	if err != nil {
		return err
	}
	path := filepath.Join(work, "corpus.jsonl")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return err
	}
	if _, err := corpus.Import(ctx, lk, CorpusName, []string{path}); err != nil {
		return fmt.Errorf("lab: corpus: %w", err)
	}
	return lk.CreateRun(ctx, run, cfg)
}

// readLatest is the newest published version in a checkpoint directory.
func readLatest(dir string) (string, bool) {
	body, err := os.ReadFile(filepath.Join(dir, "latest.json"))
	if err != nil {
		return "", false
	}
	var latest struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(body, &latest) != nil || latest.Version == "" {
		return "", false
	}
	return latest.Version, true
}

// FileSHA256 is the hex SHA-256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]), nil
}

var needRe = regexp.MustCompile(`self\.need = (\d+)`)

// Difficulty is a lab program's difficulty: the streak of right moves it needs, plus 2 when its goal is
// hidden from the observation; NaN for a program not written from the lab's fragments.
func Difficulty(code string) float64 {
	m := needRe.FindStringSubmatch(code)
	if m == nil {
		return math.NaN()
	}
	d, _ := strconv.Atoi(m[1])
	if strings.Contains(code, `self.shown = "go somewhere"`) {
		d += 2
	}
	return float64(d)
}

// measure reads a finished step's instruments.
func measure(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, s steprun.StepSummary, expected string, calls []Call, srv *Server) (schemas.LabStepRow, error) {
	row := schemas.LabStepRow{Step: s.Step, AgentISWeight: math.NaN(), DesignerISWeight: math.NaN(), ExpectedVersion: expected,
		SolveRate: s.NoHint, HintedSolveRate: s.Hint, Seconds: s.Elapsed.Seconds(), MeanDifficulty: math.NaN()}
	absent := func(err error) bool { return errors.Is(err, lake.ErrNotCommitted) }
	metrics, err := lake.ReadStep[schemas.TrainMetricsRow](ctx, lk, run, schemas.TrainMetricsSpec.Name, s.Step)
	if err != nil && !absent(err) {
		return row, err
	}
	for _, m := range metrics {
		switch m.Role {
		case schemas.RoleAgent:
			row.AgentISWeight = m.ISWeightMean
		case schemas.RoleDesigner:
			row.DesignerISWeight = m.ISWeightMean
		}
		row.PublishedVersion = m.WeightsVersion
	}
	row.Calls = int64(len(calls))
	for _, c := range calls {
		if c.WeightsVersion != expected {
			row.CallsOffVersion++
		}
	}
	recorded, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, run, schemas.LLMCallsSpec.Name, s.Step)
	if err != nil && !absent(err) {
		return row, err
	}
	for _, c := range recorded {
		if cfg.Ablation.FrozenDesigner && c.Role != schemas.RoleAgent {
			continue // the frozen Designer's and hint writer's calls keep the initial weights by design
		}
		if c.WeightsVersion != expected {
			row.RecordedOffVersion++
		}
	}
	if row.PublishedVersion != "" {
		if row.TrainerSHA256, err = FileSHA256(filepath.Join(cfg.GRPO.CheckpointDir, row.PublishedVersion, "model.pt")); err != nil {
			return row, fmt.Errorf("lab: step %d: the trainer's weights: %w", s.Step, err)
		}
		info, err := srv.Info()
		if err != nil {
			return row, err
		}
		if info.WeightsVersion == row.PublishedVersion {
			row.ServerSHA256 = info.WeightsSHA256
		}
	}
	envs, err := lake.ReadStep[schemas.EnvRow](ctx, lk, run, schemas.EnvsSpec.Name, s.PoolStep)
	if err != nil && !absent(err) {
		return row, err
	}
	sum, n := 0.0, 0
	for _, e := range envs {
		if d := Difficulty(e.Code); !math.IsNaN(d) {
			sum += d
			n++
		}
	}
	if n > 0 {
		row.MeanDifficulty = sum / float64(n)
	}
	return row, nil
}

// Call is one line of the server's call log: a sampled completion and the weights that sampled it.
type Call struct {
	Seed             int64  `json:"seed"`
	WeightsVersion   string `json:"weights_version"`
	WeightsSHA256    string `json:"weights_sha256"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
}

// Server is a running lab policy server.
type Server struct {
	// URL is the server's root (no /v1).
	URL string

	cmd     *exec.Cmd
	callLog string
	read    int64
}

// Info is the server's GET /get_model_info answer.
type Info struct {
	ModelPath      string `json:"model_path"`
	WeightsVersion string `json:"weights_version"`
	WeightsSHA256  string `json:"weights_sha256"`
}

// StartServer starts spade_lab_server.py serve on model (sources in py) on a free port, logging its
// calls to callLog; it returns once the server listens.
func StartServer(ctx context.Context, python, py, model, callLog string, log io.Writer) (*Server, error) {
	cmd := exec.Command(python, filepath.Join(py, "spade_lab_server.py"), "serve", model, "--name", ModelName, "--call-log", callLog)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+py)
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("lab: starting the policy server with %s: %w", python, err)
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		line := ""
		if sc.Scan() {
			line = sc.Text()
		}
		first <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-first:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, ctx.Err()
	}
	var hello struct {
		Listening string `json:"listening"`
	}
	if json.Unmarshal([]byte(line), &hello) != nil || hello.Listening == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("lab: the policy server did not start (its log says why): %q", line)
	}
	s := &Server{URL: hello.Listening, cmd: cmd, callLog: callLog}
	if st, err := os.Stat(callLog); err == nil {
		s.read = st.Size()
	}
	return s, nil
}

// Stop ends the server process.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// Info asks the server which weights it serves.
func (s *Server) Info() (Info, error) {
	var info Info
	resp, err := http.Get(s.URL + "/get_model_info")
	if err != nil {
		return info, fmt.Errorf("lab: server: %w", err)
	}
	defer resp.Body.Close()
	return info, json.NewDecoder(resp.Body).Decode(&info)
}

// Load has the server load the weights in dir (the trainer's publish call, made by the lab on resume).
func (s *Server) Load(dir string) error {
	body, _ := json.Marshal(map[string]string{"model_path": dir})
	resp, err := http.Post(s.URL+"/update_weights_from_disk", "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("lab: server: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("lab: the server did not load %s: %s", dir, msg)
	}
	return nil
}

// TakeCalls returns the calls logged since the last TakeCalls (or the server's start).
func (s *Server) TakeCalls() []Call {
	f, err := os.Open(s.callLog)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(s.read, io.SeekStart); err != nil {
		return nil
	}
	body, _ := io.ReadAll(f)
	end := bytes.LastIndexByte(body, '\n') + 1
	s.read += int64(end)
	var calls []Call
	for _, line := range bytes.Split(body[:end], []byte("\n")) {
		var c Call
		if len(line) > 0 && json.Unmarshal(line, &c) == nil {
			calls = append(calls, c)
		}
	}
	return calls
}
