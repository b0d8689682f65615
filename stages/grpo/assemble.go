package grpo

import (
	"errors"
	"fmt"
	"sort"

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
}

// AgentSamples returns one sample per assistant turn of the step's episodes (SPADE §2.2), with advantage
// ComputeGRPOOutcomeAdvantage of the episode's return within its group: the env's unhinted episodes (and,
// with IncludeHinted, its hinted episodes as a separate group, since their prompt differs).
//
// Episodes that ended in env_error are left out of the groups and get no samples (the env failed, not the
// Agent), as the regret stage leaves them out of the Designer's reward. A turn whose call failed or sampled
// no token gives no sample. Samples are sorted by env, hinted, episode index and turn; Step, Batch are
// left for the caller.
func AgentSamples(in AgentInput) ([]schemas.GRPOBatchRow, error) {
	calls := make(map[string]*schemas.LLMCallRow, len(in.Calls))
	for i := range in.Calls {
		calls[in.Calls[i].CallID] = &in.Calls[i]
	}
	turns := map[string][]*schemas.TurnRow{}
	for i := range in.Turns {
		t := &in.Turns[i]
		turns[t.EpisodeID] = append(turns[t.EpisodeID], t)
	}
	type group struct {
		env    string
		hinted bool
	}
	groups := map[group][]*schemas.EpisodeRow{}
	for i := range in.Episodes {
		e := &in.Episodes[i]
		if (e.Hinted && !in.IncludeHinted) || e.EndedBy == schemas.EndedEnvError {
			continue
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
	var out []schemas.GRPOBatchRow
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
		}
		advantages := ComputeGRPOOutcomeAdvantage(returns, AdvantageEpsilon)
		for i, e := range episodes {
			ts := turns[e.EpisodeID]
			sort.Slice(ts, func(a, b int) bool { return ts[a].Turn < ts[b].Turn })
			for _, t := range ts {
				if t.CallID == "" {
					continue // the turn made no call (the env ended the episode first)
				}
				call, found := calls[t.CallID]
				if !found {
					return nil, fmt.Errorf("grpo: turn %d of episode %s references call %s, which is not in llm_calls of step %d (commit rollout's llm_calls with its turns)", t.Turn, e.EpisodeID, t.CallID, e.Step)
				}
				prompt, response, logprobs, ok, err := callTokens(call)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				out = append(out, schemas.GRPOBatchRow{Role: schemas.RoleAgent, SampleID: fmt.Sprintf("%s#%d", t.CallID, t.Turn),
					EpisodeID: e.EpisodeID, EnvID: e.EnvID, PromptIDs: prompt, ResponseIDs: response, OldLogprobs: logprobs,
					Advantage: advantages[i], ISWeight: 1})
			}
		}
	}
	return out, nil
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
