package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spadekit/spade/schemas"
)

// designKeys are the keys scripts and notebooks rely on (docs/architecture.md, "Run configuration"),
// with the 30B games defaults.
var designKeys = map[string]string{
	"seed":                     "0",
	"setting":                  "games",
	"sample.envs_per_step":     "24",
	"sample.skills_per_window": "3",
	"sample.refresh_every":     "4",
	"sample.corpus":            "default",
	"llm.designer.base_url":    "",
	"llm.agent.base_url":       "",
	"llm.designer.model":       "Qwen/Qwen3-30B-A3B-Instruct-2507",
	"llm.agent.model":          "Qwen/Qwen3-30B-A3B-Instruct-2507",
	"llm.designer.max_tokens":  "16384",
	"llm.agent.max_tokens":     "8192",
	"llm.max_in_flight":        "0",
	"gate.max_attempts":        "5",
	"rollout.group_size":       "8",
	"rollout.max_turns":        "25",
	"rollout.context_tokens":   "32768",
	"rollout.paired_seeds":     "false",
	"regret.weight_regret":     "0.4",
	"regret.weight_anchor":     "0.6",
	"regret.band_lo":           "0.4",
	"regret.band_hi":           "0.6",
	"memory.capacity":          "200",
	"ablation.no_corpus":       "false",
	"ablation.no_memory":       "false",
	"ablation.frozen_designer": "false",
	"grpo.clip_low":            "0.2",
	"grpo.clip_high":           "0.28",
	"grpo.kl_beta":             "0",
	"grpo.lr":                  "1e-06",
	"grpo.global_batch":        "192",
	"grpo.tis_cap":             "2",
	"grpo.trainer":             "none",
	"metrics.band_lo":          "0.2",
	"metrics.band_hi":          "0.8",
	"metrics.window":           "16",
}

func TestDesignKeysAndDefaults(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	c := Default()
	keys := map[string]bool{}
	for _, k := range Keys() {
		keys[k] = true
	}
	for key, want := range designKeys {
		if !keys[key] {
			t.Errorf("key %s (docs/architecture.md, \"Run configuration\") is missing", key)
			continue
		}
		if got, err := c.Get(key); err != nil || got != want {
			t.Errorf("default %s = %q (%v), want %q", key, got, err, want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the default config is invalid: %v", err)
	}
}

func TestPresets(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://llm.example:8000/v1")
	names := PresetNames()
	if len(names) != 12 {
		t.Fatalf("presets %v, want 3 models x (2 settings + 2 fixed-environment baselines)", names)
	}
	for _, name := range names {
		c, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("preset %s is invalid: %v", name, err)
		}
		wantSetting := schemas.SettingGames
		wantRefresh := 4
		fixed := strings.HasSuffix(name, "-"+FixedGPT55) || strings.HasSuffix(name, "-"+FixedRLVE)
		if fixed {
			wantRefresh = 1 // a new draw of the static pool at every step
		}
		if strings.HasSuffix(name, "-tools") {
			wantSetting, wantRefresh = schemas.SettingTools, 8
		}
		if name == "qwen3-4b-tools" {
			wantRefresh = 32 // cmd/tool_use/train_spade_4b.sh, not the blend script
		}
		if c.Setting != wantSetting || c.Sample.RefreshEvery != wantRefresh || c.Preset != name {
			t.Errorf("preset %s: setting %s, refresh_every %d", name, c.Setting, c.Sample.RefreshEvery)
		}
		if c.LLM.Designer.BaseURL != "http://llm.example:8000/v1" || c.LLM.Agent.BaseURL != "http://llm.example:8000/v1" {
			t.Errorf("preset %s does not take base URLs from $OPENAI_BASE_URL", name)
		}
		wantKL := 0.0 // the authors' games scripts, except 8B; every tools run uses 0.005
		if strings.HasPrefix(name, "qwen3-8b-") || strings.HasSuffix(name, "-tools") {
			wantKL = 0.005
		}
		if strings.HasSuffix(name, "-"+FixedRLVE) {
			wantKL = 0 // the RLVE scripts use no KL at any size
		}
		if fixed != (c.Sample.Pool != "") {
			t.Errorf("preset %s: sample.pool %q", name, c.Sample.Pool)
		}
		if c.GRPO.KLBeta != wantKL {
			t.Errorf("preset %s: grpo.kl_beta %v, want %v", name, c.GRPO.KLBeta, wantKL)
		}
	}
	tools, _ := Preset("qwen3-8b-tools")
	tools.Rollout.AgentPrompt = AgentPromptProblem
	if err := tools.Validate(); err == nil || !strings.Contains(err.Error(), "rollout.agent_prompt") {
		t.Errorf("the problem prompt in tools validated: %v", err)
	}
	for _, bad := range []string{"", "qwen3-8b", "qwen3-8b-games-tools", "qwen3-2b-games", "games", "qwen3-8b-games-fixed-rlve", "qwen3-8b-fixed-gpt4"} {
		if _, err := Preset(bad); err == nil || !strings.Contains(err.Error(), "unknown preset") {
			t.Errorf("Preset(%q) = %v, want an unknown-preset error", bad, err)
		}
	}
}

func TestSetNamesTheKey(t *testing.T) {
	c := Default()
	for _, tc := range []struct{ key, value, want string }{
		{"rollout.groupsize", "8", `unknown key "rollout.groupsize"`},
		{"rollout.group_size", "8.5", `key "rollout.group_size" wants an integer`},
		{"grpo.lr", "fast", `key "grpo.lr" wants a number`},
		{"rollout.paired_seeds", "yes please", `key "rollout.paired_seeds" wants true or false`},
		{"rollout", "1", `unknown key "rollout"`},
	} {
		if err := c.Set(tc.key, tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%s, %s) = %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	if err := c.Set("rollout.group_size", "8"); err != nil || c.Rollout.GroupSize != 8 {
		t.Fatalf("Set group_size: %v, %d", err, c.Rollout.GroupSize)
	}
}

func TestMergeAndParse(t *testing.T) {
	c := Default()
	if err := c.Merge([]byte(`{"rollout": {"group_size": 4}, "grpo.kl_beta": 0.01, "setting": "tools"}`)); err != nil {
		t.Fatal(err)
	}
	if c.Rollout.GroupSize != 4 || c.GRPO.KLBeta != 0.01 || c.Setting != "tools" {
		t.Fatalf("merge gave %+v", c)
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"rollout": {"group_sizes": 4}}`, `"rollout.group_sizes"`},
		{`{"rollout": {"group_size": "4"}}`, `key "rollout.group_size" wants an integer, got the string "4"`},
		{`{"rollout.paired_seeds": 1}`, `key "rollout.paired_seeds" wants true or false, got the number 1`},
		{`[1]`, "not a JSON object"},
	} {
		if err := Default().Merge([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Merge(%s) = %v, want %q", tc.doc, err, tc.want)
		}
	}
	back, err := Parse(c.JSON())
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("Parse(JSON()) = %+v, %v", back, err)
	}
	if _, err := Parse([]byte(`{"seed": 1, "extra": true}`)); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Fatalf("Parse accepted an unknown key: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"setting", "arcade", `"setting"`},
		{"regret.band_lo", "0.7", `"regret.band_lo"`},
		{"metrics.band_hi", "1.5", `key "metrics.band_hi" must be in [0, 1]; got 1.5`},
		{"metrics.band_lo", "0.9", `key "metrics.band_lo" (0.9) must be at most metrics.band_hi (0.8)`},
		{"rollout.group_size", "0", `"rollout.group_size"`},
		{"grpo.trainer", "jax", `"grpo.trainer"`},
	} {
		c := Default()
		if err := c.Set(tc.key, tc.value); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: Validate() = %v, want an error naming %s", tc.key, tc.value, err, tc.want)
		}
	}
}

func TestPoolArithmetic(t *testing.T) {
	cfg := Default()
	cfg.Sample.RefreshEvery = 4
	for step, want := range map[int64][4]int64{0: {0, 0, 1, 0}, 3: {0, 1, 0, 0}, 4: {4, 0, 1, 1}, 7: {4, 1, 0, 1}, 9: {8, 0, 0, 2}} {
		end, refresh := int64(0), int64(0)
		if cfg.PoolEnd(step) {
			end = 1
		}
		if cfg.IsRefresh(step) {
			refresh = 1
		}
		if got := [4]int64{cfg.PoolStep(step), end, refresh, cfg.PoolIndex(step)}; got != want {
			t.Errorf("step %d: pool start, end, refresh, index = %v, want %v", step, got, want)
		}
	}
	if cfg.IsRefresh(-4) {
		t.Error("a negative step is a refresh")
	}
	cfg.Sample.RefreshEvery = 0 // treated as 1: every step is its own pool
	if cfg.PoolStep(5) != 5 || !cfg.PoolEnd(5) || !cfg.IsRefresh(5) {
		t.Error("refresh_every 0 is not treated as 1")
	}
}

func TestEnumKeysRejectInvalidValues(t *testing.T) {
	for _, tc := range []struct{ key, valid string }{
		{"setting", "games, tools"},
		{"regret.variant", "regret_anchor, regret, anchor, ema_lp, regret_based"},
		{"grpo.trainer", "none, torch"},
		{"grpo.publish", "lora, command, none, sglang, vllm_reload"},
		{"grpo.sample_unit", "episode, turn"},
		{"grpo.adv_std", "population, sample"},
		{"grpo.failed_play", "env_error, drop, minus_one"},
		{"grpo.agg", "token-mean, seq-mean-token-mean"},
		{"outcome.value", "return, success"},
	} {
		if got := strings.Join(EnumValues(tc.key), ", "); got != tc.valid {
			t.Errorf("EnumValues(%s) = %q, want %q", tc.key, got, tc.valid)
		}
		c := Default()
		if err := c.Set(tc.key, "typo"); err != nil {
			t.Fatal(err)
		}
		want := `config: key "` + tc.key + `" must be one of ` + tc.valid + `; got "typo"`
		if err := c.Validate(); err == nil || err.Error() != want {
			t.Errorf("%s=typo: Validate() = %v, want %q", tc.key, err, want)
		}
		for _, v := range EnumValues(tc.key) {
			c := Default()
			if err := c.Set(tc.key, v); err != nil {
				t.Fatal(err)
			}
			if tc.key == "grpo.publish" && v == "command" {
				c.GRPO.PublishCommand = "true"
			}
			if err := c.Validate(); err != nil {
				t.Errorf("%s=%s: %v", tc.key, v, err)
			}
		}
	}
	if EnumValues("rollout.group_size") != nil || EnumValues("nope") != nil {
		t.Error("EnumValues of a non-enum key is not nil")
	}
}

func TestOutcomeExcludeEndedBy(t *testing.T) {
	c := Default()
	if got, err := c.Outcome.Excluded(); err != nil || !reflect.DeepEqual(got, []schemas.EndedBy{schemas.EndedEnvError, schemas.EndedTimeout}) {
		t.Fatalf("default exclusion %v, %v; want env_error and timeout", got, err)
	}
	for value, want := range map[string][]schemas.EndedBy{
		"":                       nil,
		"env_error":              {schemas.EndedEnvError},
		" timeout , agent_error": {schemas.EndedTimeout, schemas.EndedAgentError},
	} {
		c.Outcome.ExcludeEndedBy = value
		got, err := c.Outcome.Excluded()
		if err != nil || !reflect.DeepEqual(got, want) || c.Validate() != nil {
			t.Errorf("exclude_ended_by %q: %v, %v; want %v", value, got, err, want)
		}
	}
	c.Outcome.ExcludeEndedBy = "env_error,crashed"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `"outcome.exclude_ended_by"`) ||
		!strings.Contains(err.Error(), "done, env_truncated, max_turns, truncated, env_error, timeout, agent_error") {
		t.Errorf("Validate() = %v, want an error naming outcome.exclude_ended_by and the values", err)
	}
}

func TestParseValidatesAndFillsNewKeys(t *testing.T) {
	c, _ := Preset("qwen3-8b-tools")
	c.Rollout.GroupSize = 4
	var doc map[string]any
	if err := json.Unmarshal(c.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "outcome") // a run.json written before the outcome keys existed
	old, _ := json.Marshal(doc)
	back, err := Parse(old)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("Parse of a run.json without outcome keys = %+v, want %+v", back, c)
	}
	doc["regret"].(map[string]any)["variant"] = "typo"
	bad, _ := json.Marshal(doc)
	if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), `key "regret.variant" must be one of regret_anchor, regret, anchor, ema_lp`) {
		t.Errorf("Parse accepted an invalid regret.variant: %v", err)
	}
}

// The presets are the authors' launch scripts, row by row (README, "The method: presets and settings").
func TestPresetsAreTheAuthorsScripts(t *testing.T) {
	games, _ := Preset("qwen3-30b-a3b-games")
	tools, _ := Preset("qwen3-8b-tools")
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"plays", [3]any{games.Rollout.GroupSize, games.Rollout.HintedGroupSize, games.Rollout.HintedAt}, [3]any{8, 16, HintedAtPoolStart}},
		{"episode", [4]any{games.Rollout.Return, games.Rollout.HintPlacement, games.Rollout.ActionFormat, games.Rollout.Context}, [4]any{ReturnTerminal, HintInObservation, ActionBoxed, ContextTruncate}},
		{"paired seeds", games.Rollout.PairedSeeds, false},
		{"sampling", [3]any{games.LLM.Agent.Temperature, games.LLM.Agent.TopP, games.LLM.Agent.TopK}, [3]any{0.6, 0.95, 20}},
		{"designer sampling", [3]any{games.LLM.Designer.Temperature, games.LLM.Designer.TopP, games.LLM.Designer.TopK}, [3]any{0.6, 0.95, 20}},
		{"step timeout", games.Sandbox.StepTimeoutSeconds, 30},
		{"hint", [5]any{games.Generate.HintMode, games.Generate.HintTemperature, games.Generate.HintTopP, games.Generate.HintMaxTokens, tools.Generate.HintMaxTokens}, [5]any{HintSeparate, 0.3, 0.9, 4096, 2048}},
		{"regeneration", [3]any{games.Generate.Regen, games.Gate.MaxAttempts, games.Gate.Checks}, [3]any{RegenResample, 5, GateOfficial}},
		{"documents", [4]any{games.Sample.DocDraw, games.Sample.ExcerptWords, tools.Sample.ExcerptWords, games.Sample.SkillOrder}, [4]any{DocReplacement, 6000, 4000, SkillsRoundRobin}},
		{"regret", [4]any{games.Regret.Scale, games.Regret.Ramp, games.Regret.Delta, games.Regret.EMAUpdate}, [4]any{0.15, 0.25, DeltaMatched, EMAPerPool}},
		{"ema", [2]any{games.Regret.EMAFast, games.Regret.EMASlow}, [2]any{0.98, 0.85}},
		{"designer scale", games.GRPO.DesignerAdvScale, "auto"},
		{"memory", [6]any{games.Memory.Seeds, games.Memory.SeedPool, games.Memory.CodeChars, games.Memory.ShowHint, games.Memory.Negatives, games.Memory.NegativesCode}, [6]any{2, 10, 2000, false, 1, false}},
		{"optimizer", [4]any{games.GRPO.WeightDecay, games.GRPO.AdamBeta1, games.GRPO.AdamBeta2, games.GRPO.TIS}, [4]any{0.1, 0.9, 0.98, TISToken}},
		{"update", [6]any{games.GRPO.SampleUnit, games.GRPO.MixRoles, games.GRPO.AdvStd, games.GRPO.FailedPlay, games.GRPO.Agg, games.GRPO.LoRARank}, [6]any{SampleEpisode, true, AdvStdPopulation, FailedDrop, AggSeqMeanTokenMean, 0}},
		{"tools", [2]any{tools.Sample.RefreshEvery, tools.GRPO.KLBeta}, [2]any{8, 0.005}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if err := games.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestSlurmArgsMayNotTakeOverWhatSpadeSets: extra sbatch arguments are accepted unless they set what
// spade sets for every job (the array, the dependencies, the log, the name).
func TestSlurmArgsMayNotTakeOverWhatSpadeSets(t *testing.T) {
	for args, ok := range map[string]bool{
		"--qos=high --constraint=a100": true, "--exclusive": true, "-N 1": true,
		"--array=0-3": false, "-a 1": false, "--dependency=afterany:1": false, "-o /tmp/x": false, "-e/tmp/x": false,
		"--output=x": false, "--job-name=x": false, "--wrap=x": false,
	} {
		c := Default()
		if err := c.Set("slurm.rollout.args", args); err != nil {
			t.Fatal(err)
		}
		err := c.Validate()
		if (err == nil) != ok {
			t.Errorf("slurm.rollout.args %q: Validate() = %v, want ok %v", args, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "slurm.rollout.args") {
			t.Errorf("%q: the error does not name the key: %v", args, err)
		}
	}
}
