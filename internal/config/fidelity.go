package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spadekit/spade/schemas"
)

// The enum keys of the method's settings: each row of the authors' launch scripts that spade can run
// either way (the README's preset table says which value each preset takes and where it comes from).

// HintedAt is rollout.hinted_at: at which steps of a pool the hinted plays run.
type HintedAt string

// The hinted-play schedules.
const (
	// HintedAtPoolStart plays rollout.hinted_group_size hinted episodes per env at the pool's first
	// step only (the authors' scripts).
	HintedAtPoolStart HintedAt = "pool_start"
	// HintedAtEveryStep plays them at every step of the pool, at most rollout.group_size of them.
	HintedAtEveryStep HintedAt = "every_step"
)

// HintedAtValues lists every schedule.
func HintedAtValues() []HintedAt { return []HintedAt{HintedAtPoolStart, HintedAtEveryStep} }

// ReturnKind is rollout.return: what an episode's return (episodes.return) is.
type ReturnKind string

// The returns.
const (
	// ReturnTerminal is the last step's reward clipped to [−1, 1] when the episode terminated, else 0
	// (the authors' episode_reward).
	ReturnTerminal ReturnKind = "terminal"
	// ReturnSum is the sum of the env's rewards over the episode.
	ReturnSum ReturnKind = "sum"
)

// ReturnKindValues lists every return.
func ReturnKindValues() []ReturnKind { return []ReturnKind{ReturnTerminal, ReturnSum} }

// HintPlacement is rollout.hint_placement: where a hinted play's Agent reads the hint.
type HintPlacement string

// The hint placements.
const (
	// HintInObservation appends a blank line and "HINT: ..." to the first observation (the paper and
	// the authors' code).
	HintInObservation HintPlacement = "observation"
	// HintInSystem puts the hint in the Agent's system prompt.
	HintInSystem HintPlacement = "system"
)

// HintPlacementValues lists every placement.
func HintPlacementValues() []HintPlacement { return []HintPlacement{HintInObservation, HintInSystem} }

// ActionFormat is rollout.action_format: how the Agent marks its move in a games answer.
type ActionFormat string

// The action formats.
const (
	// ActionBoxed reads the last \boxed{...} of the answer (the authors' games template).
	ActionBoxed ActionFormat = "boxed"
	// ActionTag reads <action>...</action>.
	ActionTag ActionFormat = "tag"
)

// ActionFormatValues lists every action format.
func ActionFormatValues() []ActionFormat { return []ActionFormat{ActionBoxed, ActionTag} }

// ContextPolicy is rollout.context: what happens when an episode's history no longer fits
// rollout.context_tokens.
type ContextPolicy string

// The context policies.
const (
	// ContextTruncate ends the episode (the authors keep the whole history and stop there).
	ContextTruncate ContextPolicy = "truncate"
	// ContextDropOldest drops the oldest turns from the prompt and goes on.
	ContextDropOldest ContextPolicy = "drop_oldest"
)

// ContextPolicyValues lists every context policy.
func ContextPolicyValues() []ContextPolicy {
	return []ContextPolicy{ContextTruncate, ContextDropOldest}
}

// TokenIO is rollout.token_io: how the Agent's turns are sent to the server.
type TokenIO string

// The token I/O modes.
const (
	// TokenIOChat sends every turn to Chat Completions with the message history (the server's chat
	// template renders it).
	TokenIOChat TokenIO = "chat"
	// TokenIOTokens sends turn 0 to Chat Completions and every later turn to /completions with the
	// running token sequence as the prompt (rollout.token_io_template).
	TokenIOTokens TokenIO = "tokens"
)

// TokenIOValues lists every token I/O mode.
func TokenIOValues() []TokenIO { return []TokenIO{TokenIOChat, TokenIOTokens} }

// TokenIOObservation is the placeholder of rollout.token_io_template that the observation replaces.
const TokenIOObservation = "{observation}"

// HintMode is generate.hint_mode: who writes the privileged hint.
type HintMode string

// The hint modes.
const (
	// HintSeparate asks the same model in a separate, untrained call after the gate accepts the env;
	// the call reads the accepted program (the paper and the authors' code).
	HintSeparate HintMode = "separate"
	// HintInline takes the hint from the Designer's own (trained) answer.
	HintInline HintMode = "inline"
)

// HintModeValues lists every hint mode.
func HintModeValues() []HintMode { return []HintMode{HintSeparate, HintInline} }

// Regen is generate.regen: how a slot whose candidate failed the gate is asked again.
type Regen string

// The regeneration modes.
const (
	// RegenResample draws a fresh sample of the original prompt (with a fresh corpus document), no error
	// feedback (the authors' scripts).
	RegenResample Regen = "resample"
	// RegenRepair shows the Designer its failed program and the gate's error.
	RegenRepair Regen = "repair"
)

// RegenValues lists every regeneration mode.
func RegenValues() []Regen { return []Regen{RegenResample, RegenRepair} }

// GateChecks is gate.checks: which checks decide acceptance. The static check and the sandbox stay on
// in both.
type GateChecks string

// The gate check sets.
const (
	// GateOfficial is the authors' gate: load, reset, then step("1"), step("2"), step("test") without an
	// exception (tools: plus the tool checks and the screen).
	GateOfficial GateChecks = "official"
	// GateStrict adds determinism, smoke probes, the trivial and hint-leak probes.
	GateStrict GateChecks = "strict"
)

// GateChecksValues lists every check set.
func GateChecksValues() []GateChecks { return []GateChecks{GateOfficial, GateStrict} }

// DocDraw is sample.doc_draw: how a slot's corpus document is drawn.
type DocDraw string

// The document draws.
const (
	// DocUniform draws uniformly among unused documents (the authors').
	DocUniform DocDraw = "uniform"
	// DocMatched prefers documents whose domain suits the slot's skill.
	DocMatched DocDraw = "matched"
)

// DocDrawValues lists every draw.
func DocDrawValues() []DocDraw { return []DocDraw{DocUniform, DocMatched} }

// SkillOrder is sample.skill_order: how the active skills of each pool are chosen.
type SkillOrder string

// The skill orders.
const (
	// SkillsRoundRobin takes sample.skills_per_window skills per pool, round-robin through
	// sample.skills in its order (the authors').
	SkillsRoundRobin SkillOrder = "round_robin"
	// SkillsSeeded rotates a seeded shuffle of the skills.
	SkillsSeeded SkillOrder = "seeded"
)

// SkillOrderValues lists every order.
func SkillOrderValues() []SkillOrder { return []SkillOrder{SkillsRoundRobin, SkillsSeeded} }

// RegretDelta is regret.delta: which unhinted plays the hint regret Δ compares the hinted plays with.
type RegretDelta string

// The regret deltas.
const (
	// DeltaMatched compares with the unhinted plays of the same (pool-start) step as the hinted ones.
	DeltaMatched RegretDelta = "matched"
	// DeltaWindow compares with every unhinted play of the pool's window.
	DeltaWindow RegretDelta = "window"
)

// RegretDeltaValues lists every delta.
func RegretDeltaValues() []RegretDelta { return []RegretDelta{DeltaMatched, DeltaWindow} }

// EMAUpdate is regret.ema_update: how often the per-skill EMA baselines move.
type EMAUpdate string

// The EMA update schedules.
const (
	// EMAPerPool updates once per pool (the authors').
	EMAPerPool EMAUpdate = "pool"
	// EMAPerStep updates at every step.
	EMAPerStep EMAUpdate = "step"
)

// EMAUpdateValues lists every schedule.
func EMAUpdateValues() []EMAUpdate { return []EMAUpdate{EMAPerPool, EMAPerStep} }

// SkillList returns sample.skills as a list (every skill, in schemas.Skills order, when empty), or an
// error naming the key for an unknown or repeated skill.
func (c *Config) SkillList() ([]string, error) {
	if strings.TrimSpace(c.Sample.Skills) == "" {
		if c.Setting == schemas.SettingTools {
			return []string{schemas.SkillToolUse}, nil
		}
		return slices.Clone(schemas.Skills), nil
	}
	var out []string
	for _, part := range strings.Split(c.Sample.Skills, ",") {
		s := strings.TrimSpace(part)
		if !slices.Contains(schemas.Skills, s) && s != schemas.SkillToolUse {
			return nil, fmt.Errorf("config: key \"sample.skills\": unknown skill %q (skills: %s)", s, strings.Join(schemas.Skills, ", "))
		}
		if slices.Contains(out, s) {
			return nil, fmt.Errorf("config: key \"sample.skills\": %q is listed twice", s)
		}
		out = append(out, s)
	}
	if c.Sample.SkillsPerWindow > len(out) {
		return nil, fmt.Errorf("config: key \"sample.skills_per_window\" (%d) is more than sample.skills lists (%d)", c.Sample.SkillsPerWindow, len(out))
	}
	return out, nil
}

// DesignerAdvScale parses grpo.designer_adv_scale: auto (returns auto = true) or a positive number.
func (c *Config) DesignerAdvScale() (scale float64, auto bool, err error) {
	v := strings.TrimSpace(c.GRPO.DesignerAdvScale)
	if v == "auto" {
		return 0, true, nil
	}
	x, perr := strconv.ParseFloat(v, 64)
	if perr != nil || !(x > 0) {
		return 0, false, fmt.Errorf("config: key \"grpo.designer_adv_scale\" must be auto or a number > 0, got %q", c.GRPO.DesignerAdvScale)
	}
	return x, false, nil
}

// TIS is grpo.tis: how the trainer corrects for the inference engine's log-probs.
type TIS string

// The TIS modes.
const (
	// TISToken weights every token by min(grpo.tis_cap, π_old/π_rollout) (the authors' --use-tis).
	TISToken TIS = "token"
	// TISSequence weights the Designer's samples by a capped per-sample ratio to the proximal policy.
	TISSequence TIS = "sequence"
	// TISOff trains on the rollout log-probs as they are.
	TISOff TIS = "off"
)

// TISValues lists every TIS mode.
func TISValues() []TIS { return []TIS{TISToken, TISSequence, TISOff} }

// SampleUnit is grpo.sample_unit: what one Agent training sample is.
type SampleUnit string

// The sample units.
const (
	// SampleEpisode is one sample per play: the first prompt, then every Agent completion (trained) with
	// the tokens the chat template adds between them (masked) — the authors' samples.
	SampleEpisode SampleUnit = "episode"
	// SampleTurn is one sample per Agent turn: that call's prompt and completion.
	SampleTurn SampleUnit = "turn"
)

// SampleUnitValues lists every sample unit.
func SampleUnitValues() []SampleUnit { return []SampleUnit{SampleEpisode, SampleTurn} }

// AdvStd is grpo.adv_std: the standard deviation of the Agent's group advantage.
type AdvStd string

// The standard deviations.
const (
	// AdvStdPopulation divides by n, with ε = 1e-8 (the authors' np.std).
	AdvStdPopulation AdvStd = "population"
	// AdvStdSample divides by n − 1, with ε = 1e-6.
	AdvStdSample AdvStd = "sample"
)

// AdvStdValues lists every standard deviation.
func AdvStdValues() []AdvStd { return []AdvStd{AdvStdPopulation, AdvStdSample} }

// FailedPlay is grpo.failed_play: what a play that failed for infrastructure reasons contributes to its
// env's Agent advantage group.
type FailedPlay string

// The ways to treat a failed play.
const (
	// FailedEnvError leaves env_error plays out of the group; timeout and agent_error plays count with
	// their return.
	FailedEnvError FailedPlay = "env_error"
	// FailedDrop leaves every failed play (env_error, timeout, agent_error) out of the group and the
	// batch: what the authors' self-play runs do, since their collector drops FAILED plays (after one
	// retry) before the rewards are normalised.
	FailedDrop FailedPlay = "drop"
	// FailedMinusOne counts every failed play in its group with return −1 (the authors'
	// normalize_rewards_per_game branch); the failed play itself gives no sample.
	FailedMinusOne FailedPlay = "minus_one"
)

// FailedPlayValues lists every way to treat a failed play.
func FailedPlayValues() []FailedPlay { return []FailedPlay{FailedEnvError, FailedDrop, FailedMinusOne} }

// PublishURLs returns the generation servers a full-weights publish must reach: grpo.publish_urls
// (comma-separated), else grpo.publish_url, else llm.agent.base_url.
func (c *Config) PublishURLs() []string {
	var urls []string
	for _, u := range strings.Split(c.GRPO.PublishURLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) > 0 {
		return urls
	}
	if c.GRPO.PublishURL != "" {
		return []string{c.GRPO.PublishURL}
	}
	if c.LLM.Agent.BaseURL != "" {
		return []string{c.LLM.Agent.BaseURL}
	}
	return nil
}

// FullWeights reports whether a publish mode loads whole checkpoints into a server that keeps its
// served model name (sglang, vllm_reload): calls then keep llm.<role>.model as their model and record
// the published version as weights_version only.
func (p Publish) FullWeights() bool { return p == PublishSGLang || p == PublishVLLMReload }
