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

// The fixed-environment baselines: a games preset of each size that plays an imported pool instead of
// generating envs (the authors' cmd/games/train_fixed_*.sh).
const (
	// FixedGPT55 names the presets of Fixed-env GRPO on the authors' static GPT-5.5 pool
	// (cmd/games/train_fixed_gpt55_{4b,8b,30b}.sh); the pool is imported as sample.pool "gpt55".
	FixedGPT55 = "fixed-gpt55"
	// FixedRLVE names the presets of Fixed-env RLVE (cmd/games/train_fixed_rlve_{4b,8b,30b}.sh); the
	// pool is imported as sample.pool "rlve".
	FixedRLVE = "fixed-rlve"
)

// PresetNames lists every preset, sorted: each size with -games and -tools (SPADE), -fixed-gpt55 and
// -fixed-rlve (the fixed-environment baselines).
func PresetNames() []string {
	var names []string
	for m := range presetModels {
		names = append(names, m+"-games", m+"-tools", m+"-"+FixedGPT55, m+"-"+FixedRLVE)
	}
	sort.Strings(names)
	return names
}

// presetSpec is what a family's preset values depend on: the model size, the setting, the model and
// base URL the roles call, and which fixed-environment baseline the preset is ("" for SPADE itself).
type presetSpec struct {
	size    string
	setting schemas.Setting
	model   string
	baseURL string
	fixed   string
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
	c := &Config{
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
		Slurm:    presetSlurm(p),
	}
	presetFixed(c, p)
	return c, nil
}

// presetFixed turns a games preset into its fixed-environment baseline. Both play a static pool with no
// Designer and no hinted plays (their orchestrators never compute hints without a regeneration), a new
// draw of envs at every step:
//
//   - fixed-gpt55 (cmd/games/_train_fixed_gpt55.sh): 24 games per step drawn without replacement from
//     the whole pool (--spade-static-game-pool --spade-no-replacement), 192 / 24 = 8 plays each; every
//     other value is the games script's;
//   - fixed-rlve (cmd/games/train_fixed_rlve_{4b,8b,30b}.sh): 16 environments per step
//     (--rollout-batch-size 16), 16 plays of one shared problem each (--spade-trajectories-per-game 16,
//     --spade-fixed-env-same-problem), global batch 256, Agent temperature 1.0, no KL at any size, and
//     RLVE's sliding window (tau_acc 0.9, tau_num 128, d_delta 4; the adapter's top level 20), and the
//     fixed-environment orchestrator's prompt for RLVE problems (rollout.agent_prompt problem).
func presetFixed(c *Config, p presetSpec) {
	if p.fixed != "" {
		// Both baselines play their scripts' trajectories per game, which equal the batch's share
		// (192 / 24 = 8, 256 / 16 = 16) since every drawn env of a static pool plays.
		c.Rollout.PlaysPerEnv = PlaysGroupSize
	}
	switch p.fixed {
	case FixedGPT55:
		c.Sample.Pool, c.Sample.RefreshEvery = "gpt55", 1
		c.Rollout.HintedGroupSize = 0
	case FixedRLVE:
		c.Sample.Pool, c.Sample.RefreshEvery, c.Sample.EnvsPerStep = "rlve", 1, 16
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize = 16, 0
		c.GRPO.GlobalBatch, c.GRPO.KLBeta = 256, 0
		c.LLM.Agent.Temperature = 1.0
		c.Rollout.AgentPrompt = AgentPromptProblem
	}
}

// parsePresetName splits a preset name into its size and setting.
func parsePresetName(name string) (presetSpec, error) {
	size, setting, fixed, base := "", schemas.Setting(""), "", name
	for _, f := range []string{FixedGPT55, FixedRLVE} {
		if s, ok := strings.CutSuffix(name, "-"+f); ok {
			base, fixed = s+"-games", f
		}
	}
	if s, ok := strings.CutSuffix(base, "-games"); ok {
		size, setting = s, schemas.SettingGames
	} else if s, ok := strings.CutSuffix(base, "-tools"); ok {
		size, setting = s, schemas.SettingTools
	}
	model, known := presetModels[size]
	if !known {
		return presetSpec{}, invalidf("config: unknown preset %q (one of %s)", name, strings.Join(PresetNames(), ", "))
	}
	return presetSpec{size: size, setting: setting, model: model, baseURL: os.Getenv("OPENAI_BASE_URL"), fixed: fixed}, nil
}
