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
	c := &Config{
		Preset:  name,
		Seed:    0,
		Setting: schemas.Setting(setting),
		Sample: Sample{EnvsPerStep: 24, SkillsPerWindow: 3, RefreshEvery: 4, Corpus: "default", ExcerptChars: 4000,
			DocDraw: DocMatched, SkillOrder: SkillsSeeded},
		LLM: LLM{
			Designer:       Role{BaseURL: base, Model: model, APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 16384, Temperature: 1.0, TopP: 1.0},
			Agent:          Role{BaseURL: base, Model: model, APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 8192, Temperature: 1.0, TopP: 1.0},
			Screen:         Role{APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 2048, Temperature: 0, TopP: 1.0},
			MaxInFlight:    256,
			TimeoutSeconds: 600,
			MaxRetries:     6,
		},
		Sandbox:  Sandbox{Workers: 0, LoadTimeoutSeconds: 10, StepTimeoutSeconds: 5, MemoryMB: 1024, MaxObservationBytes: 65536},
		Gate:     Gate{MaxAttempts: 5, ResetSeeds: 3, Checks: GateStrict},
		Generate: Generate{HintMode: HintInline, HintTemperature: 0.3, HintMaxTokens: 4096, Regen: RegenRepair},
		Rollout: Rollout{GroupSize: 16, HintedGroupSize: 16, HintedAt: HintedAtEveryStep, MaxTurns: 25, ContextTokens: 32768,
			Context: ContextDropOldest, PairedSeeds: true, Return: ReturnSum, HintPlacement: HintInSystem, ActionFormat: ActionTag},
		Regret: Regret{WeightRegret: 0.4, WeightAnchor: 0.6, BandLo: 0.4, BandHi: 0.6, Variant: schemas.VariantRegretAnchor, EMAFast: 0.5, EMASlow: 0.1,
			Delta: DeltaWindow, EMAUpdate: EMAPerStep},
		Memory: Memory{Capacity: 200, Seeds: 4, Examples: 2, ShowHint: true, NegativesCode: true},
		GRPO: GRPO{ClipLow: 0.20, ClipHigh: 0.28, KLBeta: 0.0, LR: 1e-6, GlobalBatch: 192, TISCap: 2.0,
			Trainer: TrainerNone, TrainerGPUs: 1, Agg: AggTokenMean, MaxGradNorm: 1.0, Publish: PublishLoRA,
			LoRARank: 32, LoRAAlpha: 64, MicroBatchTokens: 16384, GradientCheckpointing: true, DesignerAdvScale: "1",
			AdamBeta1: 0.9, AdamBeta2: 0.999, TIS: TISSequence, SampleUnit: SampleTurn, AdvStd: AdvStdSample,
			FailedPlay: FailedEnvError},
		Metrics: Metrics{BandLo: 0.2, BandHi: 0.8, Window: 16},
		Outcome: Outcome{ExcludeEndedBy: DefaultExcludeEndedBy, Value: OutcomeReturn},
	}
	if setting == "tools" {
		c.Sample.RefreshEvery = 8
	}
	if size == "qwen3-8b" {
		c.GRPO.KLBeta = 0.005
		c.LLM.Designer.MaxTokens = 20000
	}
	return c, nil
}
