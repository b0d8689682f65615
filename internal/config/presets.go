package config

import (
	"os"
	"sort"
	"strings"

	"github.com/spadekit/spade/schemas"
)

// presetModels maps each preset size to its model: a preset name is a size and a setting.
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

// presetSpec is what a family's preset values depend on: the model size, the setting, and the model and
// base URL the roles call.
type presetSpec struct {
	size    string
	setting schemas.Setting
	model   string
	baseURL string
}

// ownToolsScript reports whether the preset follows cmd/tool_use/train_spade_4b.sh, the 4B tools
// recipe, rather than the blend script the 8B and 30B tools presets follow.
func (p presetSpec) ownToolsScript() bool {
	return p.size == "qwen3-4b" && p.setting == schemas.SettingTools
}

// Default returns the 30B games configuration (the paper's main setting).
func Default() *Config {
	c, _ := Preset("qwen3-30b-a3b-games")
	return c
}

// Preset returns the configuration of a named preset: every value of the method is the authors' launch
// scripts' (cmd/games/train_spade_{4b,8b,30b}.sh, cmd/tool_use/_train_spade_blend.sh for 8B and 30B
// tools and cmd/tool_use/train_spade_4b.sh for 4B tools; docs/configuration.md's preset table lists them), each family's from its preset function. Base URLs default to
// $OPENAI_BASE_URL at the time of the call.
func Preset(name string) (*Config, error) {
	p, err := parsePresetName(name)
	if err != nil {
		return nil, err
	}
	return &Config{
		Preset:   name,
		Seed:     0,
		Setting:  p.setting,
		Sample:   presetSample(p),
		LLM:      presetLLM(p),
		Sandbox:  presetSandbox(p),
		Gate:     presetGate(p),
		Rollout:  presetRollout(p),
		Regret:   presetRegret(p),
		Memory:   presetMemory(p),
		Generate: presetGenerate(p),
		Ablation: presetAblation(p),
		GRPO:     presetGRPO(p),
		Metrics:  presetMetrics(p),
		Outcome:  presetOutcome(p),
		Eval:     presetEval(p),
	}, nil
}

// parsePresetName splits a preset name into its size and setting.
func parsePresetName(name string) (presetSpec, error) {
	size, setting := "", schemas.Setting("")
	if s, ok := strings.CutSuffix(name, "-games"); ok {
		size, setting = s, schemas.SettingGames
	} else if s, ok := strings.CutSuffix(name, "-tools"); ok {
		size, setting = s, schemas.SettingTools
	}
	model, known := presetModels[size]
	if !known {
		return presetSpec{}, invalidf("config: unknown preset %q (one of %s)", name, strings.Join(PresetNames(), ", "))
	}
	return presetSpec{size: size, setting: setting, model: model, baseURL: os.Getenv("OPENAI_BASE_URL")}, nil
}
