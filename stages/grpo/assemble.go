package grpo

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// ErrMissingTokens is returned when an llm_calls row lacks the token ids or log-probs GRPO trains on.
var ErrMissingTokens = errors.New("grpo: llm_calls lack token ids or logprobs")

// missingTokens explains the fix: the server must return token ids and log-probs, since GRPO never
// re-tokenizes text.
func missingTokens(call *schemas.LLMCallRow, what string) error {
	return fmt.Errorf("%w: call %s (%s, step %d, model %q) has no %s. The generation server did not return them: "+
		"serve the model with vLLM (spade requests `logprobs: true`, `top_logprobs: 0` and vLLM's `return_token_ids: true`, "+
		"which returns prompt_token_ids and choices[].token_ids) or another server that returns token ids and logprobs, "+
		"then redo the step's rollout (or generate) with --force; GRPO trains on the sampled tokens and never re-tokenizes text",
		ErrMissingTokens, call.CallID, call.Role, call.Step, call.Model, what)
}

// callTokens returns a call's prompt ids, response ids and behaviour log-probs, or ok = false for a call
// that sampled nothing (it failed, or completed with zero tokens), or an ErrMissingTokens error.
func callTokens(call *schemas.LLMCallRow) (prompt, response []int32, logprobs []float32, ok bool, err error) {
	if call.Error != "" {
		return nil, nil, nil, false, nil
	}
	if len(call.CompletionTokenIDs) == 0 {
		if call.CompletionTokens > 0 || call.ResponseText != "" || call.ToolCalls != "" {
			return nil, nil, nil, false, missingTokens(call, "completion token ids")
		}
		return nil, nil, nil, false, nil
	}
	if len(call.CompletionLogprobs) != len(call.CompletionTokenIDs) {
		return nil, nil, nil, false, missingTokens(call, fmt.Sprintf("completion logprobs (%d for %d tokens)", len(call.CompletionLogprobs), len(call.CompletionTokenIDs)))
	}
	if len(call.PromptTokenIDs) == 0 {
		return nil, nil, nil, false, missingTokens(call, "prompt token ids")
	}
	return call.PromptTokenIDs, call.CompletionTokenIDs, call.CompletionLogprobs, true, nil
}

// AgentInput is what agent sample assembly reads: one step's episodes, turns and llm_calls.
type AgentInput struct {
	Episodes []schemas.EpisodeRow
	Turns    []schemas.TurnRow
	Calls    []schemas.LLMCallRow
	// IncludeHinted adds hinted episodes (grpo.include_hinted), standardized in their own group.
	IncludeHinted bool
	// Unit is grpo.sample_unit: turn ("" too) gives a sample per Agent call, episode one per play.
	Unit config.SampleUnit
	// Std is grpo.adv_std: sample ("" too) or population.
	Std config.AdvStd
	// Failed is grpo.failed_play: env_error ("" too), drop or minus_one.
	Failed config.FailedPlay
	// Compact is grpo.compact_filter: a play that ran out (ranOut) keeps its return in its group and
	// gives samples whose every token has loss mask 0.
	Compact bool
}

// ranOut reports whether a play ran out of budget rather than reaching an end state: out of turns or
// context (max_turns), at an answer cut at max_tokens (truncated), or truncated by the env's own time
// limit (env_truncated, Gymnasium's truncated). These are the authors' TRUNCATED samples.
func ranOut(e *schemas.EpisodeRow) bool {
	return e.EndedBy == schemas.EndedMaxTurns || e.EndedBy == schemas.EndedTruncated || e.EndedBy == schemas.EndedEnvTruncated
}

// maskAll sets every response token of samples to loss mask 0.
func maskAll(samples []schemas.GRPOBatchRow) {
	for i := range samples {
		samples[i].LossMask = make([]int8, len(samples[i].ResponseIDs))
	}
}

// failedPlay reports whether a play ended for an infrastructure reason rather than by the game or the
// turn limit: the env raised or broke its contract (env_error), overran its deadline (timeout), or the
// Agent's call failed (agent_error). These are the authors' FAILED trajectories (their orchestrator
// marks load/reset/step errors and timeouts and generation errors FAILED).
func failedPlay(e *schemas.EpisodeRow) bool {
	return e.EndedBy == schemas.EndedEnvError || e.EndedBy == schemas.EndedTimeout || e.EndedBy == schemas.EndedAgentError
}

// FailedReturn is the return a failed play counts with under grpo.failed_play = minus_one.
const FailedReturn = -1.0

// AgentSamples is AssembleAgent for a caller that wants every play assembled: the first play that cannot
// be (LeftOut.First) is its error.
func AgentSamples(in AgentInput) ([]schemas.GRPOBatchRow, error) {
	a, err := AssembleAgent(in)
	if err != nil {
		return nil, err
	}
	if a.LeftOut.Total() > 0 {
		return nil, a.LeftOut.First
	}
	return a.Samples, nil
}

// The causes a play is left out of training for (LeftOut).
const (
	// CauseBrokenPrefix: a turn's prompt does not extend the previous prompt and completion
	// (ErrBrokenPrefix; chat mode on a template that re-renders the history, or a re-tokenized
	// completion).
	CauseBrokenPrefix = "broken_prefix"
	// CauseMissingTokens: a call lacks the token ids or log-probs GRPO trains on (ErrMissingTokens).
	CauseMissingTokens = "missing_tokens"
	// CauseMissingCall: a turn references a call that is not in the step's llm_calls (a corrupt record).
	CauseMissingCall = "missing_call"
)

// LeftOut counts the plays of a step that could not be assembled into samples, per cause.
type LeftOut struct {
	// BrokenPrefix, MissingTokens and MissingCall count the plays left out for each cause.
	BrokenPrefix, MissingTokens, MissingCall int
	// First is the error of the first play left out (in the samples' order), nil when none was.
	First error
}

// Total is the number of plays left out.
func (l LeftOut) Total() int { return l.BrokenPrefix + l.MissingTokens + l.MissingCall }

// String lists the non-zero causes, "broken_prefix 2, missing_tokens 1"; empty when none.
func (l LeftOut) String() string {
	var parts []string
	for _, c := range []struct {
		name string
		n    int
	}{{CauseBrokenPrefix, l.BrokenPrefix}, {CauseMissingTokens, l.MissingTokens}, {CauseMissingCall, l.MissingCall}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	return strings.Join(parts, ", ")
}

// add counts a play left out for err.
func (l *LeftOut) add(err error) {
	switch {
	case errors.Is(err, ErrBrokenPrefix):
		l.BrokenPrefix++
	case errors.Is(err, ErrMissingTokens):
		l.MissingTokens++
	default:
		l.MissingCall++
	}
	if l.First == nil {
		l.First = err
	}
}

// AgentAssembly is the Agent's part of a step's batch.
type AgentAssembly struct {
	// Samples are the Agent's samples (see AssembleAgent).
	Samples []schemas.GRPOBatchRow
	// Plays is the number of plays that were to give samples (those in a group and not failed plays
	// under minus_one); LeftOut counts those of them that could not be assembled.
	Plays   int
	LeftOut LeftOut
	// Compacted is the number of plays whose samples grpo.compact_filter masked out (ranOut).
	Compacted int
}

// ExceedsShare reports whether more than share (grpo.max_left_out_share) of the plays were left out.
func (a AgentAssembly) ExceedsShare(share float64) bool {
	return a.Plays > 0 && float64(a.LeftOut.Total()) > share*float64(a.Plays)
}

// AssembleAgent returns the Agent's samples of the step's episodes (SPADE §2.2), each with advantage
// GroupAdvantage (grpo.adv_std) of its episode's return within its group: the env's unhinted episodes
// (and, with IncludeHinted, its hinted episodes as a separate group, since their prompt differs).
//
// Under Unit = turn every assistant turn is a sample (its call's prompt and completion); under episode
// a play is one sample (EpisodeSample). Failed plays (failedPlay) follow Failed: env_error leaves the
// env_error plays out of the groups (the env failed, not the Agent, as the regret stage leaves them out
// of the Designer's reward) and keeps the others with their return; drop leaves every failed play out;
// minus_one counts every failed play in its group with return FailedReturn and takes no sample from it.
// A turn whose call failed or sampled no token gives no sample. Samples are sorted by env, hinted,
// episode index and turn; Step, Batch are left for the caller.
//
// A play whose samples cannot be assembled (ErrBrokenPrefix, ErrMissingTokens, a turn whose call is
// missing) gives no sample at all, not even its other turns, and is counted in LeftOut; it keeps its
// return in its group, since its outcome is sound and only its tokens are not, so the other plays'
// advantages do not depend on which plays could be assembled. Under Compact a play that ran out
// (ranOut) keeps its return in its group too, and its samples stay in the batch with every loss mask
// entry 0 (counted in Compacted). The error is an unknown setting only.
func AssembleAgent(in AgentInput) (AgentAssembly, error) {
	var res AgentAssembly
	calls := make(map[string]*schemas.LLMCallRow, len(in.Calls))
	for i := range in.Calls {
		calls[in.Calls[i].CallID] = &in.Calls[i]
	}
	turns := map[string][]*schemas.TurnRow{}
	for i := range in.Turns {
		t := &in.Turns[i]
		turns[t.EpisodeID] = append(turns[t.EpisodeID], t)
	}
	advantage, err := groupAdvantage(in.Std)
	if err != nil {
		return res, err
	}
	if in.Unit != config.SampleTurn && in.Unit != config.SampleEpisode && in.Unit != "" {
		return res, fmt.Errorf("grpo: config key \"grpo.sample_unit\": unknown value %q", in.Unit)
	}
	type group struct {
		env    string
		hinted bool
	}
	groups := map[group][]*schemas.EpisodeRow{}
	for i := range in.Episodes {
		e := &in.Episodes[i]
		if e.Hinted && !in.IncludeHinted {
			continue
		}
		switch in.Failed {
		case config.FailedDrop:
			if failedPlay(e) {
				continue
			}
		case config.FailedMinusOne:
		case config.FailedEnvError, "":
			if e.EndedBy == schemas.EndedEnvError {
				continue
			}
		default:
			return res, fmt.Errorf("grpo: config key \"grpo.failed_play\": unknown value %q", in.Failed)
		}
		g := group{e.EnvID, e.Hinted}
		groups[g] = append(groups[g], e)
	}
	keys := make([]group, 0, len(groups))
	for g := range groups {
		keys = append(keys, g)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].env != keys[j].env {
			return keys[i].env < keys[j].env
		}
		return !keys[i].hinted && keys[j].hinted
	})
	for _, g := range keys {
		episodes := groups[g]
		sort.Slice(episodes, func(i, j int) bool {
			if episodes[i].Index != episodes[j].Index {
				return episodes[i].Index < episodes[j].Index
			}
			return episodes[i].EpisodeID < episodes[j].EpisodeID
		})
		returns := make([]float64, len(episodes))
		for i, e := range episodes {
			returns[i] = e.Return
			if in.Failed == config.FailedMinusOne && failedPlay(e) {
				returns[i] = FailedReturn
			}
		}
		advantages := advantage(returns)
		for i, e := range episodes {
			if in.Failed == config.FailedMinusOne && failedPlay(e) {
				continue // counted in the group, but a failed play is no sample (the authors' has no tokens)
			}
			res.Plays++
			ts := turns[e.EpisodeID]
			sort.Slice(ts, func(a, b int) bool { return ts[a].Turn < ts[b].Turn })
			before := len(res.Samples)
			var err error
			if in.Unit == config.SampleEpisode {
				var row schemas.GRPOBatchRow
				var ok bool
				if row, ok, err = EpisodeSample(e, ts, calls); err == nil && ok {
					row.Advantage = advantages[i]
					res.Samples = append(res.Samples, row)
				}
			} else {
				res.Samples, err = appendTurnSamples(res.Samples, e, ts, calls, advantages[i])
			}
			switch {
			case err != nil:
				res.Samples = res.Samples[:before]
				res.LeftOut.add(err)
			case in.Compact && ranOut(e) && len(res.Samples) > before:
				maskAll(res.Samples[before:])
				res.Compacted++
			}
		}
	}
	return res, nil
}

// appendTurnSamples appends one sample per sampled Agent turn of a play (grpo.sample_unit = turn), each
// with the play's advantage; on an error the caller drops what was appended.
func appendTurnSamples(out []schemas.GRPOBatchRow, e *schemas.EpisodeRow, ts []*schemas.TurnRow, calls map[string]*schemas.LLMCallRow, adv float64) ([]schemas.GRPOBatchRow, error) {
	for _, t := range ts {
		call, ok, err := turnCall(e, t, calls)
		if err != nil {
			return out, err
		}
		if !ok {
			continue
		}
		prompt, response, logprobs, ok, err := callTokens(call)
		if err != nil {
			return out, err
		}
		if !ok {
			continue
		}
		row := schemas.GRPOBatchRow{Role: schemas.RoleAgent, SampleID: fmt.Sprintf("%s#%d", t.CallID, t.Turn),
			EpisodeID: e.EpisodeID, EnvID: e.EnvID, PromptIDs: prompt, ResponseIDs: response, OldLogprobs: logprobs,
			Advantage: adv, ISWeight: 1}
		if t.Masked() {
			row.LossMask = make([]int8, len(response)) // a turn masked from the loss (schemas.MaskedTurnPrefix)
		}
		out = append(out, row)
	}
	return out, nil
}

// turnCall returns a turn's llm_calls row; ok is false for a turn that made no call (the env ended the
// episode first).
func turnCall(e *schemas.EpisodeRow, t *schemas.TurnRow, calls map[string]*schemas.LLMCallRow) (*schemas.LLMCallRow, bool, error) {
	if t.CallID == "" {
		return nil, false, nil
	}
	call, found := calls[t.CallID]
	if !found {
		return nil, false, fmt.Errorf("grpo: turn %d of episode %s references call %s, which is not in llm_calls of step %d (commit rollout's llm_calls with its turns)", t.Turn, e.EpisodeID, t.CallID, e.Step)
	}
	return call, true, nil
}

// ErrBrokenPrefix is returned when an episode's turns cannot be joined into one token sequence.
var ErrBrokenPrefix = errors.New("grpo: an Agent turn's prompt does not extend the previous turn's prompt and completion")

// EpisodeSample joins one play's Agent turns (sorted by turn) into a single sample (grpo.sample_unit =
// episode; the authors' training sample): the prompt is the first call's prompt; the response is every
// completion in order, each preceded (from the second on) by the tokens the chat template put between it
// and the previous completion (the closing of the assistant message, the observation, the next
// assistant header). Completion tokens are trained with the log-probs the server returned (loss_mask 1;
// 0 for a turn masked from the loss, TurnRow.Masked);
// the tokens in between are context only (loss_mask 0, log-prob 0).
//
// It relies on the invariant that each call's prompt token ids begin with the previous call's prompt
// and completion token ids, which holds when the chat template renders the history verbatim and the
// server returns the ids it sampled. A template that re-renders earlier turns (Qwen3's drops the empty
// think block of past assistant messages), a re-tokenized completion, or a context policy that drops
// old turns breaks it: that is ErrBrokenPrefix, naming the episode, the turn and the first differing
// position. ok is false for a play without any sampled token (no sample).
func EpisodeSample(e *schemas.EpisodeRow, turns []*schemas.TurnRow, calls map[string]*schemas.LLMCallRow) (schemas.GRPOBatchRow, bool, error) {
	var (
		prompt   []int32
		response []int32
		logprobs []float32
		mask     []int8
		prevTurn int32
		started  bool
	)
	for _, t := range turns {
		call, ok, err := turnCall(e, t, calls)
		if err != nil {
			return schemas.GRPOBatchRow{}, false, err
		}
		if !ok {
			continue
		}
		p, completion, lp, ok, err := callTokens(call)
		if err != nil {
			return schemas.GRPOBatchRow{}, false, err
		}
		if !ok {
			continue
		}
		if !started {
			prompt, started = p, true
		} else {
			if at := prefixMismatch(p, prompt, response); at >= 0 {
				return schemas.GRPOBatchRow{}, false, fmt.Errorf("%w: episode %s (env %s), turn %d (call %s): its prompt differs at token %d "+
					"from turn %d's prompt and completion (%d tokens). The chat template re-renders the history or the completion was "+
					"re-tokenized, so the play is not one token sequence: serve the Agent with a chat template that keeps past "+
					"assistant messages verbatim (for Qwen3, one that keeps their empty think block), or use grpo.sample_unit = turn",
					ErrBrokenPrefix, e.EpisodeID, e.EnvID, t.Turn, call.CallID, at, prevTurn, len(prompt)+len(response))
			}
			gap := p[len(prompt)+len(response):]
			response = append(response, gap...)
			logprobs = append(logprobs, make([]float32, len(gap))...)
			mask = append(mask, make([]int8, len(gap))...)
		}
		response = append(response, completion...)
		logprobs = append(logprobs, lp...)
		trained := int8(1)
		if t.Masked() {
			trained = 0 // a turn masked from the loss (schemas.MaskedTurnPrefix): context only
		}
		for range completion {
			mask = append(mask, trained)
		}
		prevTurn = t.Turn
	}
	if !started {
		return schemas.GRPOBatchRow{}, false, nil
	}
	return schemas.GRPOBatchRow{Role: schemas.RoleAgent, SampleID: e.EpisodeID, EpisodeID: e.EpisodeID, EnvID: e.EnvID,
		PromptIDs: prompt, ResponseIDs: response, OldLogprobs: logprobs, LossMask: mask, ISWeight: 1}, true, nil
}

// prefixMismatch returns the first position at which ids does not begin with head followed by tail, or
// -1 when it does.
func prefixMismatch(ids, head, tail []int32) int {
	for i, id := range head {
		if i >= len(ids) || ids[i] != id {
			return i
		}
	}
	for i, id := range tail {
		at := len(head) + i
		if at >= len(ids) || ids[at] != id {
			return at
		}
	}
	return -1
}

// DesignerInput is what designer sample assembly reads at a pool's end.
type DesignerInput struct {
	// Rewards are the pool-end designer_rewards rows (only final rows of Variant are used).
	Rewards []schemas.DesignerRewardRow
	// Variant is regret.variant, the reward the Designer is trained on.
	Variant schemas.Variant
	// Envs are the pool's envs (their generating call ids).
	Envs []schemas.EnvRow
	// Calls are the pool step's llm_calls (the Designer's calls are among them).
	Calls []schemas.LLMCallRow
	// TISCap is grpo.tis_cap, stored with each sample for the trainer's truncated IS weight.
	TISCap float64
	// Scale multiplies the centred rewards (grpo.designer_adv_scale, resolved; DesignerAdvScale); 0 means 1.
	Scale float64
}

// DesignerSamples returns one sample per scored env of the pool: its generating call's tokens, advantage
// ComputeDesignerAdvantage of the final rewards over the pool's scored envs times Scale, is_weight 1 and
// is_cap TISCap (the trainer recomputes min(is_cap, π_θ/π_behaviour) with the current policy). Excluded
// envs (including a regret_anchor row masked for a negative blend) give no sample and take no part in the
// skill means. Sorted by env_id.
func DesignerSamples(in DesignerInput) ([]schemas.GRPOBatchRow, error) {
	envs := map[string]*schemas.EnvRow{}
	for i := range in.Envs {
		envs[in.Envs[i].EnvID] = &in.Envs[i]
	}
	calls := make(map[string]*schemas.LLMCallRow, len(in.Calls))
	for i := range in.Calls {
		calls[in.Calls[i].CallID] = &in.Calls[i]
	}
	var scored []schemas.DesignerRewardRow
	for _, r := range in.Rewards {
		if r.Final && r.Variant == in.Variant && r.Excluded == "" {
			scored = append(scored, r)
		}
	}
	sort.Slice(scored, func(i, j int) bool { return scored[i].EnvID < scored[j].EnvID })
	rewards := make([]float64, len(scored))
	skills := make([]string, len(scored))
	for i, r := range scored {
		rewards[i], skills[i] = r.Reward, r.Skill
	}
	scale := in.Scale
	if scale == 0 {
		scale = 1
	}
	advantages := ComputeDesignerAdvantage(rewards, skills)
	out := make([]schemas.GRPOBatchRow, 0, len(scored))
	for i, r := range scored {
		env, found := envs[r.EnvID]
		if !found {
			return nil, fmt.Errorf("grpo: env %s has a final reward but is not in envs of pool %d", r.EnvID, r.PoolStep)
		}
		call, found := calls[env.CallID]
		if !found {
			return nil, fmt.Errorf("grpo: env %s was generated by call %q, which is not in llm_calls of pool step %d", env.EnvID, env.CallID, env.PoolStep)
		}
		prompt, response, logprobs, ok, err := callTokens(call)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("grpo: env %s: its generating call %s sampled no tokens", env.EnvID, call.CallID)
		}
		out = append(out, schemas.GRPOBatchRow{Role: schemas.RoleDesigner, SampleID: call.CallID, EnvID: env.EnvID,
			PromptIDs: prompt, ResponseIDs: response, OldLogprobs: logprobs, Advantage: scale * advantages[i], ISWeight: 1, ISCap: in.TISCap})
	}
	return out, nil
}

// DesignerAdvScale resolves grpo.designer_adv_scale for a pool end: the number it names, or under auto
// ComputeDesignerAdvScale of the step's Agent plays (its unhinted episodes: the plays the Agent is trained
// on, as the authors count them; hinted plays are never trained there) and the pool's Designer samples
// (one per env of the pool) over sample.refresh_every steps.
func DesignerAdvScale(cfg *config.Config, episodes []schemas.EpisodeRow, envs []schemas.EnvRow) (float64, error) {
	scale, auto, err := cfg.DesignerAdvScale()
	if err != nil {
		return 0, fmt.Errorf("grpo: %w", err)
	}
	if !auto {
		return scale, nil
	}
	plays := 0
	for i := range episodes {
		if !episodes[i].Hinted {
			plays++
		}
	}
	return ComputeDesignerAdvScale(plays, len(envs), cfg.Sample.RefreshEvery), nil
}
