// Package config is the run configuration (docs/architecture.md, "Run configuration"): presets with the
// paper's Table 5 values, dotted keys (`rollout.group_size`), and strict parsing: an unknown key or a value
// of the wrong type is an error that names the key. A run's config is written once to run.json by `spade
// init` and never changed.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/spadekit/spade/schemas"
)

// Config is a run's whole configuration. Field json tags are the dotted keys' segments.
type Config struct {
	// Preset names the preset the run started from.
	Preset string `json:"preset"`
	// Seed drives every random choice of the run (skill rotation, documents, reset seeds).
	Seed int64 `json:"seed"`
	// Setting is games or tools.
	Setting  schemas.Setting `json:"setting"`
	Sample   Sample          `json:"sample"`
	LLM      LLM             `json:"llm"`
	Sandbox  Sandbox         `json:"sandbox"`
	Gate     Gate            `json:"gate"`
	Rollout  Rollout         `json:"rollout"`
	Regret   Regret          `json:"regret"`
	Memory   Memory          `json:"memory"`
	Generate Generate        `json:"generate"`
	Ablation Ablation        `json:"ablation"`
	GRPO     GRPO            `json:"grpo"`
	Metrics  Metrics         `json:"metrics"`
	Outcome  Outcome         `json:"outcome"`
	Eval     Eval            `json:"eval"`
	// Parent is set on a child run (`spade init --from RUN@STEP`): the run and step whose lake state the
	// child inherited. It is not a key: only --from sets it.
	Parent *Parent `json:"parent,omitempty" key:"-"`
}

// Parent names the run and the step a child run continues from.
type Parent struct {
	// Run is the parent run's name.
	Run string `json:"run"`
	// Step is the parent's last step the child inherited; the child continues at Step+1.
	Step int64 `json:"step"`
}

// Sample configures the pool schedule and corpus draw.
type Sample struct {
	EnvsPerStep     int    `json:"envs_per_step"`
	SkillsPerWindow int    `json:"skills_per_window"`
	RefreshEvery    int    `json:"refresh_every"`
	Corpus          string `json:"corpus"`
	// ExcerptChars cuts a slot's document to this many characters (0: no character cut).
	ExcerptChars int `json:"excerpt_chars"`
	// ExcerptWords cuts a slot's document to this many words (0: no word cut); the authors' scripts cut
	// games documents at 6,000 and tools documents at 4,000.
	ExcerptWords int `json:"excerpt_words"`
	// DocDraw is how a slot's document is drawn: uniform or matched to the skill's domains.
	DocDraw DocDraw `json:"doc_draw"`
	// Skills is the comma-separated list of skills the pools draw from, in round-robin order (empty:
	// all six, in schemas.Skills order); the two-skill ablation lists two.
	Skills string `json:"skills"`
	// SkillOrder is how each pool's sample.skills_per_window active skills are chosen.
	SkillOrder SkillOrder `json:"skill_order"`
	// Pool names a static pool imported with `spade pool import` that every refresh step takes its envs
	// from instead of generating them (fixed-environment GRPO; empty: the Designer generates).
	Pool string `json:"pool"`
}

// Role configures the model behind one role.
type Role struct {
	BaseURL     string  `json:"base_url"`
	Model       string  `json:"model"`
	APIKeyEnv   string  `json:"api_key_env"`
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	// TopK keeps the k most likely tokens at each sampling step (0: not sent, the server's default).
	TopK int `json:"top_k"`
}

// LLM configures the generation backends.
type LLM struct {
	Designer       Role   `json:"designer"`
	Agent          Role   `json:"agent"`
	Screen         Role   `json:"screen"`
	MaxInFlight    int    `json:"max_in_flight"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	MaxRetries     int    `json:"max_retries"`
	PromptFile     string `json:"prompt_file"`
}

// Sandbox configures the execution of generated programs.
type Sandbox struct {
	Python              string `json:"python"`
	Workers             int    `json:"workers"`
	LoadTimeoutSeconds  int    `json:"load_timeout_seconds"`
	StepTimeoutSeconds  int    `json:"step_timeout_seconds"`
	MemoryMB            int    `json:"memory_mb"`
	MaxObservationBytes int    `json:"max_observation_bytes"`
	UnsafeNoIsolation   bool   `json:"unsafe_no_isolation"`
}

// Gate configures the acceptance checks.
type Gate struct {
	// MaxAttempts counts every attempt of a slot, the first included.
	MaxAttempts int `json:"max_attempts"`
	ResetSeeds  int `json:"reset_seeds"`
	// Checks is the check set that decides acceptance (official or strict).
	Checks GateChecks `json:"checks"`
}

// Generate configures the Designer's calls.
type Generate struct {
	// HintMode is who writes the hint: a separate untrained call after the gate, or the Designer inline.
	HintMode HintMode `json:"hint_mode"`
	// HintTemperature and HintMaxTokens sample the separate hint call.
	HintTemperature float64 `json:"hint_temperature"`
	HintMaxTokens   int     `json:"hint_max_tokens"`
	// HintPromptFile, when set, is a template file used instead of the embedded hint prompt.
	HintPromptFile string `json:"hint_prompt_file"`
	// Regen is how a failed slot is asked again: resample or repair.
	Regen Regen `json:"regen"`
}

// Rollout configures the Agent's episodes.
type Rollout struct {
	// GroupSize is the number of plays without the hint per env and step.
	GroupSize int `json:"group_size"`
	// HintedGroupSize is the number of plays with the hint per env, at the steps HintedAt names; with
	// every_step at most GroupSize of them are played (each hinted play has an unhinted twin), so a run
	// that only lowers group_size plays as many hinted as unhinted episodes (stages/rollout.Plays).
	HintedGroupSize int `json:"hinted_group_size"`
	// HintedAt is when the hinted plays run: the pool's first step only, or every step.
	HintedAt      HintedAt `json:"hinted_at"`
	MaxTurns      int      `json:"max_turns"`
	ContextTokens int      `json:"context_tokens"`
	// Context is what happens when the history passes ContextTokens: truncate (end the episode) or
	// drop_oldest.
	Context ContextPolicy `json:"context"`
	// PairedSeeds gives the i-th hinted and unhinted plays of an env the same reset seed.
	PairedSeeds bool `json:"paired_seeds"`
	// Return is an episode's return: terminal (last reward clipped to [−1, 1] if it terminated) or sum.
	Return ReturnKind `json:"return"`
	// HintPlacement is where a hinted play shows the hint: the first observation or the system prompt.
	HintPlacement HintPlacement `json:"hint_placement"`
	// ActionFormat is how a games answer marks its move: \boxed{...} or <action>...</action>.
	ActionFormat ActionFormat `json:"action_format"`
	// PromptFile, when set, is a template file used instead of the embedded Agent prompt: its body is the
	// system prompt (none when empty), an optional {{define "first_user"}} the first user message; both
	// get stages/rollout.PromptData (MaxTurns, Hint, Observation, ActionFormat).
	PromptFile string `json:"prompt_file"`
	// TokenIO is how the Agent's turns reach the server: chat (every turn a Chat Completions call with the
	// message history) or tokens (turn 0 a chat call, every later turn a /completions call whose prompt is
	// the running token sequence: the previous prompt ids, the completion ids, and the server's
	// tokenization of TokenIOTemplate around the observation), so a play is one token sequence by
	// construction. tokens needs rollout.context truncate and the games setting.
	TokenIO TokenIO `json:"token_io"`
	// TokenIOTemplate is, under token_io tokens, the text that follows a completion's tokens before the
	// next completion, with {observation} standing for the observation (or the parse feedback): the chat
	// template's end of the assistant turn that the completion did not already sample, the user header,
	// the observation, the end of the user turn and the generation prompt. It is tokenized by the
	// server's /tokenize without special tokens added. For a ChatML template (Qwen3), whose completions
	// end with the sampled <|im_end|>: "\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n".
	TokenIOTemplate string `json:"token_io_template"`
}

// Regret configures the Designer reward.
type Regret struct {
	WeightRegret float64 `json:"weight_regret"`
	WeightAnchor float64 `json:"weight_anchor"`
	BandLo       float64 `json:"band_lo"`
	BandHi       float64 `json:"band_hi"`
	// Variant is the reward GRPO trains the Designer on (every variant is written to designer_rewards).
	Variant schemas.Variant `json:"variant"`
	EMAFast float64         `json:"ema_fast"`
	EMASlow float64         `json:"ema_slow"`
	// Scale divides the hint regret before it is clipped to [0, 1]: clip(Δ/scale, 0, 1); 0 keeps the
	// unscaled max(0, Δ).
	Scale float64 `json:"scale"`
	// Ramp is the distance outside [band_lo, band_hi] over which the anchor falls from 1 to 0; 0 makes it
	// fall linearly to 0 at solve rates 0 and 1.
	Ramp float64 `json:"ramp"`
	// Delta is which unhinted plays Δ compares the hinted ones with: matched (same step) or window.
	Delta RegretDelta `json:"delta"`
	// EMAUpdate is how often the EMA baselines move: once per pool or every step (the weight is on the
	// new value).
	EMAUpdate EMAUpdate `json:"ema_update"`
}

// Memory configures the FIFO environment memory.
type Memory struct {
	Capacity int `json:"capacity"`
	Seeds    int `json:"seeds"`
	Examples int `json:"examples"`
	// SeedPool is the size of the top-by-regret pool the seeds are drawn from (at least 3 × seeds).
	SeedPool int `json:"seed_pool"`
	// CodeChars cuts a seed's program to this many characters in the prompt (0: whole).
	CodeChars int `json:"code_chars"`
	// ShowHint shows a seed's hint in the prompt.
	ShowHint bool `json:"show_hint"`
	// Negatives is the number of too-easy or too-hard envs shown as what to avoid.
	Negatives int `json:"negatives"`
	// NegativesCode shows a negative's program (otherwise its class name only).
	NegativesCode bool `json:"negatives_code"`
}

// Ablation holds the paper's ablation switches.
type Ablation struct {
	NoCorpus       bool `json:"no_corpus"`
	NoMemory       bool `json:"no_memory"`
	FrozenDesigner bool `json:"frozen_designer"`
	// NoDesignerGrad drops the Designer's samples from training while the shared weights keep moving with
	// the Agent's updates (the authors' "no Designer training"; frozen_designer pins the Designer's model).
	NoDesignerGrad bool `json:"no_designer_grad"`
}

// GRPO configures batch assembly and the trainer.
type GRPO struct {
	ClipLow     float64 `json:"clip_low"`
	ClipHigh    float64 `json:"clip_high"`
	KLBeta      float64 `json:"kl_beta"`
	LR          float64 `json:"lr"`
	GlobalBatch int     `json:"global_batch"`
	TISCap      float64 `json:"tis_cap"`
	// Trainer is none (assemble batches only) or torch (the PyTorch trainer of stages/grpo/trainer).
	Trainer       Trainer `json:"trainer"`
	Python        string  `json:"python"`
	TrainerGPUs   int     `json:"trainer_gpus"`
	IncludeHinted bool    `json:"include_hinted"`
	// Agg is how token losses are averaged: token-mean over the batch, or per sequence first.
	Agg         Agg     `json:"agg"`
	MaxGradNorm float64 `json:"max_grad_norm"`
	ModelPath   string  `json:"model_path"`
	// Publish is how new weights reach the generation server: lora (vLLM runtime adapter loading),
	// command (grpo.publish_command) or none.
	Publish Publish `json:"publish"`
	// PublishURL is the vLLM server that loads each new LoRA adapter (grpo.publish=lora); empty means
	// llm.agent.base_url.
	PublishURL string `json:"publish_url"`
	// PublishURLs lists, comma-separated, every generation server (replica) that loads each new full
	// checkpoint under grpo.publish = sglang or vllm_reload; empty means grpo.publish_url, else
	// llm.agent.base_url. A replica that fails to load stops the step with its URL.
	PublishURLs string `json:"publish_urls"`
	// PublishCommand is the command template run after each update when grpo.publish=command; arguments
	// may use {weights_dir}, {version}, {step} and {base_url}. It is run without a shell.
	PublishCommand string `json:"publish_command"`
	// CheckpointDir holds the trainer's weight versions and optimizer state; empty means
	// ./checkpoints/<run>. Under grpo.publish=lora it must be readable by the vLLM server.
	CheckpointDir string `json:"checkpoint_dir"`
	// LoRARank is the adapter rank; 0 trains all weights (then grpo.publish must be command or none).
	LoRARank int `json:"lora_rank"`
	// LoRAAlpha is the adapter's scaling numerator (scale = alpha / rank).
	LoRAAlpha float64 `json:"lora_alpha"`
	// MicroBatchTokens bounds one forward/backward pass (samples × longest sequence, padded tokens);
	// gradients accumulate over micro-batches up to the global batch.
	MicroBatchTokens int `json:"micro_batch_tokens"`
	// WeightDecay is AdamW's decoupled weight decay.
	WeightDecay float64 `json:"weight_decay"`
	// AdamBeta1 and AdamBeta2 are Adam's moment decay rates (the authors: 0.9, 0.98).
	AdamBeta1 float64 `json:"adam_beta1"`
	AdamBeta2 float64 `json:"adam_beta2"`
	// TIS is the truncated importance sampling: token (every token of every sample weighted by
	// min(tis_cap, π_old/π_rollout), the authors'), sequence (the Designer's samples by a capped
	// per-sample weight) or off.
	TIS TIS `json:"tis"`
	// GradientCheckpointing recomputes activations in backward to fit long sequences (HF models).
	GradientCheckpointing bool `json:"gradient_checkpointing"`
	// DesignerAdvScale multiplies the Designer's centred rewards: a number, or auto = min(50, Agent plays
	// per step / Designer samples per pool × sample.refresh_every).
	DesignerAdvScale string `json:"designer_adv_scale"`
	// SampleUnit is what one Agent sample is: turn (one per Agent call) or episode (the whole play, the
	// observations between completions masked; the authors').
	SampleUnit SampleUnit `json:"sample_unit"`
	// MixRoles builds one batch per step (the authors'): Designer samples first, then Agent samples, cut
	// to global_batch; a short batch is padded with inert copies and its real advantages scaled by
	// global_batch / n_real; one optimizer step per rollout step. false keeps one batch family per role.
	MixRoles bool `json:"mix_roles"`
	// AdvStd is the Agent advantage's standard deviation: sample (n − 1, ε 1e-6) or population (n, ε
	// 1e-8, the authors').
	AdvStd AdvStd `json:"adv_std"`
	// FailedPlay is what a play that failed for infrastructure reasons does to its group: env_error (only
	// env_error plays left out), drop (every failed play left out, as the authors' runs do) or minus_one.
	FailedPlay FailedPlay `json:"failed_play"`
}

// Metrics configures the audits.
type Metrics struct {
	BandLo float64 `json:"band_lo"`
	BandHi float64 `json:"band_hi"`
	Window int     `json:"window"`
}

// Outcome is the one definition of an episode's outcome and of which episodes an env's rates count. The
// Designer's reward (stages/regret, through internal/outcome) and every audit model of sql/ (through
// sql/env_outcomes.sql and its DuckDB variables) read these two keys, so the Designer is rewarded on the
// numbers it is audited on.
type Outcome struct {
	// ExcludeEndedBy lists, comma-separated, the ended_by values whose episodes are left out of an env's
	// counts, solve rates and mean outcomes (default "env_error,timeout"). Both say that the env program
	// failed (it raised, broke the contract, or overran its sandbox deadline), not the Agent: counting
	// them as failures would push the solve rate of a flaky env towards 0 and pay the anchor for
	// brittleness. max_turns and agent_error stay in: running out of turns is the Agent failing, and an
	// agent_error is the Agent's side too. An empty value counts every episode.
	ExcludeEndedBy string `json:"exclude_ended_by"`
	// Value is an episode's outcome o, whose mean r̄ is the hint regret's r̄(e) and r̄(e|h): return (default,
	// the sum of the env's rewards, episodes.return) or success (1 for a solved episode, else 0). The
	// solve rate is always the success fraction.
	Value OutcomeValue `json:"value"`
}

// Excluded returns the ended_by values of outcome.exclude_ended_by, or an error naming the key and the
// valid values.
func (o Outcome) Excluded() ([]schemas.EndedBy, error) {
	var out []schemas.EndedBy
	for _, part := range strings.Split(o.ExcludeEndedBy, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		e, err := schemas.ParseEndedBy(part)
		if err != nil {
			return nil, fmt.Errorf("config: key \"outcome.exclude_ended_by\": %v", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Keys returns every dotted key, sorted.
func Keys() []string {
	var keys []string
	walk(reflect.ValueOf(&Config{}).Elem(), "", func(key string, _ reflect.Value) { keys = append(keys, key) })
	sort.Strings(keys)
	return keys
}

func walk(v reflect.Value, prefix string, visit func(string, reflect.Value)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("key") == "-" {
			continue
		}
		name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		if t.Field(i).Type.Kind() == reflect.Struct {
			walk(v.Field(i), key, visit)
			continue
		}
		visit(key, v.Field(i))
	}
}

func (c *Config) field(key string) (reflect.Value, bool) {
	var found reflect.Value
	walk(reflect.ValueOf(c).Elem(), "", func(k string, v reflect.Value) {
		if k == key {
			found = v
		}
	})
	return found, found.IsValid()
}

// Set assigns a value given as text to a dotted key; it fails, naming the key, on an unknown key or a
// value that does not parse as the key's type.
func (c *Config) Set(key, value string) error {
	f, ok := c.field(key)
	if !ok {
		return fmt.Errorf("config: unknown key %q (see `spade init --help` for the keys)", key)
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(value)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("config: key %q wants an integer, got %q", key, value)
		}
		f.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("config: key %q wants a number, got %q", key, value)
		}
		f.SetFloat(x)
	case reflect.Bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("config: key %q wants true or false, got %q", key, value)
		}
		f.SetBool(b)
	default:
		return fmt.Errorf("config: key %q has unsupported kind %s", key, f.Kind())
	}
	return nil
}

// Get returns a key's value as text.
func (c *Config) Get(key string) (string, error) {
	f, ok := c.field(key)
	if !ok {
		return "", fmt.Errorf("config: unknown key %q", key)
	}
	return fmt.Sprint(f.Interface()), nil
}

// Merge applies a JSON document (nested objects or dotted keys, or both) to c. Unknown keys and values of
// the wrong JSON type are errors naming the key.
func (c *Config) Merge(doc []byte) error {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("config: not a JSON object: %v", err)
	}
	return c.mergeMap("", raw)
}

func (c *Config) mergeMap(prefix string, m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch v := m[k].(type) {
		case map[string]any:
			if err := c.mergeMap(key, v); err != nil {
				return err
			}
		default:
			f, ok := c.field(key)
			if !ok {
				return fmt.Errorf("config: unknown key %q", key)
			}
			if err := checkJSONType(key, f.Kind(), v); err != nil {
				return err
			}
			if err := c.Set(key, fmt.Sprint(v)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkJSONType(key string, kind reflect.Kind, v any) error {
	ok, want := false, ""
	switch kind {
	case reflect.String:
		_, ok = v.(string)
		want = "a string"
	case reflect.Bool:
		_, ok = v.(bool)
		want = "true or false"
	case reflect.Int, reflect.Int64:
		_, ok = v.(json.Number)
		want = "an integer"
	case reflect.Float64:
		_, ok = v.(json.Number)
		want = "a number"
	}
	if !ok {
		got := fmt.Sprintf("%T", v)
		switch v.(type) {
		case nil:
			got = "null"
		case string:
			got = fmt.Sprintf("the string %q", v)
		case bool:
			got = fmt.Sprint(v)
		case json.Number:
			got = "the number " + v.(json.Number).String()
		case []any:
			got = "a list"
		}
		return fmt.Errorf("config: key %q wants %s, got %s", key, want, got)
	}
	return nil
}

// LoadFile merges a JSON config file into c.
func (c *Config) LoadFile(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %v", err)
	}
	if err := c.Merge(doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Validate checks enums and ranges that a single Set cannot (for example band_lo < band_hi). The error
// names the key and, for an enum, lists the valid values.
func (c *Config) Validate() error {
	if err := c.validateEnums(); err != nil {
		return err
	}
	if _, err := c.Outcome.Excluded(); err != nil {
		return err
	}
	switch {
	case c.Sample.EnvsPerStep < 1:
		return fmt.Errorf("config: key \"sample.envs_per_step\" must be >= 1")
	case c.Sample.SkillsPerWindow < 1 || c.Sample.SkillsPerWindow > 6:
		return fmt.Errorf("config: key \"sample.skills_per_window\" must be in 1..6")
	case c.Sample.RefreshEvery < 1:
		return fmt.Errorf("config: key \"sample.refresh_every\" must be >= 1")
	case c.Rollout.GroupSize < 1:
		return fmt.Errorf("config: key \"rollout.group_size\" must be >= 1")
	case c.Rollout.MaxTurns < 1:
		return fmt.Errorf("config: key \"rollout.max_turns\" must be >= 1")
	case c.Gate.MaxAttempts < 1:
		return fmt.Errorf("config: key \"gate.max_attempts\" must be >= 1")
	case c.Eval.Every < 0:
		return fmt.Errorf("config: key \"eval.every\" must be >= 0 (0: no evaluation during spade run)")
	case c.Eval.Every > 0 && strings.Trim(c.Eval.Benches, " ,") == "":
		return fmt.Errorf("config: key \"eval.benches\" is empty but eval.every is %d: name the imported benchmarks to evaluate", c.Eval.Every)
	case !(c.Regret.BandLo <= c.Regret.BandHi && c.Regret.BandLo >= 0 && c.Regret.BandHi <= 1):
		return fmt.Errorf("config: keys \"regret.band_lo\" and \"regret.band_hi\" must satisfy 0 <= lo <= hi <= 1")
	case !(c.Metrics.BandLo <= c.Metrics.BandHi && c.Metrics.BandLo >= 0 && c.Metrics.BandHi <= 1):
		return fmt.Errorf("config: keys \"metrics.band_lo\" and \"metrics.band_hi\" must satisfy 0 <= lo <= hi <= 1")
	case c.Memory.Capacity < 0:
		return fmt.Errorf("config: key \"memory.capacity\" must be >= 0")
	case c.GRPO.GlobalBatch < 1:
		return fmt.Errorf("config: key \"grpo.global_batch\" must be >= 1")
	case c.GRPO.TrainerGPUs < 1:
		return fmt.Errorf("config: key \"grpo.trainer_gpus\" must be >= 1")
	case c.GRPO.MaxGradNorm < 0:
		return fmt.Errorf("config: key \"grpo.max_grad_norm\" must be >= 0 (0 turns clipping off)")
	case c.GRPO.Trainer == "torch" && c.GRPO.Publish == "command" && strings.TrimSpace(c.GRPO.PublishCommand) == "":
		return fmt.Errorf("config: key \"grpo.publish_command\" is empty but grpo.publish is command")
	case c.GRPO.Trainer == "torch" && c.GRPO.Publish.FullWeights() && c.GRPO.LoRARank != 0:
		return fmt.Errorf("config: key \"grpo.lora_rank\" must be 0 when grpo.publish is %s (it loads full checkpoints; use lora for adapters)", c.GRPO.Publish)
	case c.GRPO.Trainer == "torch" && c.GRPO.Publish == "lora" && c.GRPO.LoRARank < 1:
		return fmt.Errorf("config: key \"grpo.lora_rank\" must be >= 1 when grpo.publish is lora (or publish full weights with command)")
	case c.GRPO.LoRARank < 0:
		return fmt.Errorf("config: key \"grpo.lora_rank\" must be >= 0")
	case !(c.GRPO.AdamBeta1 >= 0 && c.GRPO.AdamBeta1 < 1 && c.GRPO.AdamBeta2 >= 0 && c.GRPO.AdamBeta2 < 1):
		return fmt.Errorf("config: keys \"grpo.adam_beta1\" and \"grpo.adam_beta2\" must be in [0, 1)")
	case !(c.GRPO.TISCap > 0):
		return fmt.Errorf("config: key \"grpo.tis_cap\" must be > 0")
	case c.GRPO.MicroBatchTokens < 1:
		return fmt.Errorf("config: key \"grpo.micro_batch_tokens\" must be >= 1")
	case c.Metrics.Window < 1:
		return fmt.Errorf("config: key \"metrics.window\" must be >= 1")
	case c.Rollout.HintedGroupSize < 0:
		return fmt.Errorf("config: key \"rollout.hinted_group_size\" must be >= 0")
	case c.Sample.ExcerptChars < 0 || c.Sample.ExcerptWords < 0:
		return fmt.Errorf("config: keys \"sample.excerpt_chars\" and \"sample.excerpt_words\" must be >= 0")
	case c.Regret.Scale < 0 || c.Regret.Ramp < 0:
		return fmt.Errorf("config: keys \"regret.scale\" and \"regret.ramp\" must be >= 0")
	case c.Memory.SeedPool < 0 || c.Memory.CodeChars < 0 || c.Memory.Negatives < 0:
		return fmt.Errorf("config: keys \"memory.seed_pool\", \"memory.code_chars\" and \"memory.negatives\" must be >= 0")
	case c.Generate.HintMaxTokens < 1:
		return fmt.Errorf("config: key \"generate.hint_max_tokens\" must be >= 1")
	case c.LLM.Designer.TopK < 0 || c.LLM.Agent.TopK < 0:
		return fmt.Errorf("config: keys \"llm.designer.top_k\" and \"llm.agent.top_k\" must be >= 0")
	case c.Rollout.TokenIO == TokenIOTokens && !strings.Contains(c.Rollout.TokenIOTemplate, TokenIOObservation):
		return fmt.Errorf("config: key \"rollout.token_io_template\" must contain %s when rollout.token_io is tokens (for Qwen3's ChatML: %q)",
			TokenIOObservation, "\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n")
	case c.Rollout.TokenIO == TokenIOTokens && c.Rollout.Context != ContextTruncate:
		return fmt.Errorf("config: key \"rollout.context\" must be truncate when rollout.token_io is tokens (dropping old turns would break the token sequence)")
	case c.Rollout.TokenIO == TokenIOTokens && c.Setting == schemas.SettingTools:
		return fmt.Errorf("config: key \"rollout.token_io\" must be chat in the tools setting (tool calls are parsed by the chat endpoint)")
	}
	if _, err := c.SkillList(); err != nil {
		return err
	}
	if _, _, err := c.DesignerAdvScale(); err != nil {
		return err
	}
	return nil
}

// JSON returns the config as indented JSON (the run.json body).
func (c *Config) JSON() []byte {
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}

// Parse reads a run.json body strictly (unknown keys are errors) and validates it. A key missing from the
// body (a run created before the key existed) takes its default: the body is read over its preset (the
// default preset when the body names none or an unknown one).
func Parse(doc []byte) (*Config, error) {
	var head struct {
		Preset string `json:"preset"`
	}
	_ = json.Unmarshal(doc, &head)
	c, err := Preset(head.Preset)
	if err != nil {
		c = Default()
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("config: run.json: %v", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	return c, nil
}
