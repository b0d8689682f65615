package config

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spadekit/spade/schemas"
)

// Preset names: a model size and a setting.
var presetModels = map[string]string{
	"qwen3-4b":      "Qwen/Qwen3-4B-Instruct-2507",
	"qwen3-8b":      "Qwen/Qwen3-8B",
	"qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B-Instruct-2507",
}

// PresetNames lists every preset, sorted.
func PresetNames() []string {
	var names []string
	for m := range presetModels {
		names = append(names, m+"-games", m+"-tools")
	}
	sort.Strings(names)
	return names
}

// Default returns the 30B games configuration (the paper's main setting, Table 5).
func Default() *Config {
	c, _ := Preset("qwen3-30b-a3b-games")
	return c
}

// Preset returns the configuration of a named preset (Table 5 of the paper). Base URLs default to
// $OPENAI_BASE_URL at the time of the call.
func Preset(name string) (*Config, error) {
	size, setting, ok := strings.Cut(name, "-games")
	if ok && setting == "" {
		setting = "games"
	} else if size, ok = strings.CutSuffix(name, "-tools"); ok {
		setting = "tools"
	} else {
		return nil, fmt.Errorf("config: unknown preset %q (one of %s)", name, strings.Join(PresetNames(), ", "))
	}
	model, known := presetModels[size]
	if !known {
		return nil, fmt.Errorf("config: unknown preset %q (one of %s)", name, strings.Join(PresetNames(), ", "))
	}
	base := os.Getenv("OPENAI_BASE_URL")
	// Every value of the method is the authors' launch scripts' (README, "Presets"; FIDELITY rows):
	// cmd/games/train_spade_{4b,8b,30b}.sh and cmd/tool_use/_train_spade_blend.sh.
	c := &Config{
		Preset:  name,
		Seed:    0,
		Setting: schemas.Setting(setting),
		Sample: Sample{EnvsPerStep: 24, SkillsPerWindow: 3, RefreshEvery: 4, Corpus: "default", ExcerptWords: 6000,
			DocDraw: DocUniform, SkillOrder: SkillsRoundRobin},
		LLM: LLM{
			Designer:       Role{BaseURL: base, Model: model, APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 16384, Temperature: 0.6, TopP: 0.95, TopK: 20},
			Agent:          Role{BaseURL: base, Model: model, APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 8192, Temperature: 0.6, TopP: 0.95, TopK: 20},
			Screen:         Role{APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 2048, Temperature: 0, TopP: 1.0},
			MaxInFlight:    256,
			TimeoutSeconds: 600,
			MaxRetries:     6,
		},
		Sandbox:  Sandbox{Workers: 0, LoadTimeoutSeconds: 10, StepTimeoutSeconds: 30, MemoryMB: 1024, MaxObservationBytes: 65536},
		Gate:     Gate{MaxAttempts: 5, ResetSeeds: 3, Checks: GateOfficial},
		Generate: Generate{HintMode: HintSeparate, HintTemperature: 0.3, HintMaxTokens: 4096, Regen: RegenResample},
		Rollout: Rollout{GroupSize: 8, HintedGroupSize: 16, HintedAt: HintedAtPoolStart, MaxTurns: 25, ContextTokens: 32768,
			Context: ContextTruncate, PairedSeeds: false, Return: ReturnTerminal, HintPlacement: HintInObservation, ActionFormat: ActionBoxed,
			TokenIO: TokenIOChat},
		Regret: Regret{WeightRegret: 0.4, WeightAnchor: 0.6, BandLo: 0.4, BandHi: 0.6, Variant: schemas.VariantRegretAnchor,
			EMAFast: 0.98, EMASlow: 0.85, Scale: 0.15, Ramp: 0.25, Delta: DeltaMatched, EMAUpdate: EMAPerPool},
		Memory: Memory{Capacity: 200, Seeds: 2, Examples: 2, SeedPool: 10, CodeChars: 2000, ShowHint: false, Negatives: 1, NegativesCode: false},
		GRPO: GRPO{ClipLow: 0.20, ClipHigh: 0.28, KLBeta: 0.0, LR: 1e-6, GlobalBatch: 192, TISCap: 2.0,
			Trainer: TrainerNone, TrainerGPUs: 1, Agg: AggSeqMeanTokenMean, MaxGradNorm: 1.0, Publish: PublishSGLang,
			LoRARank: 0, LoRAAlpha: 64, MicroBatchTokens: 16384, GradientCheckpointing: true, DesignerAdvScale: "auto",
			WeightDecay: 0.1, AdamBeta1: 0.9, AdamBeta2: 0.98, TIS: TISToken, SampleUnit: SampleEpisode, MixRoles: true,
			AdvStd: AdvStdPopulation, FailedPlay: FailedDrop},
		Metrics: Metrics{BandLo: 0.2, BandHi: 0.8, Window: 16},
		Outcome: Outcome{ExcludeEndedBy: DefaultExcludeEndedBy, Value: OutcomeReturn},
	}
	if setting == "tools" {
		// cmd/tool_use/_train_spade_blend.sh: regeneration every 8 steps, documents cut at 4,000, hint
		// calls up to 2,048 tokens, KL 0.005 at every size.
		c.Sample.RefreshEvery = 8
		c.Sample.ExcerptWords = 4000
		c.Generate.HintMaxTokens = 2048
		c.GRPO.KLBeta = 0.005
	}
	if size == "qwen3-8b" {
		c.GRPO.KLBeta = 0.005
		c.LLM.Designer.MaxTokens = 20000
	}
	return c, nil
}
