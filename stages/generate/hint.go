package generate

import (
	"context"
	"errors"
	"fmt"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
)

// hintKey is the llm call key of the hint call of an accepted env.
func hintKey(slot, attempt int32) string {
	return fmt.Sprintf("hint/slot=%d/attempt=%d", slot, attempt)
}

// Hint writes the privileged hint of an env the gate accepted (generate.hint_mode = separate; the gate's
// Hinter): one call of the Designer's model and current weights under the role hint, sampled with
// generate.hint_temperature and at most generate.hint_max_tokens tokens, whose prompt (hint.v1.tmpl, or
// generate.hint_prompt_file) carries the accepted program. It returns the hint and the recorded call,
// which the caller commits (the gate: fragment gate-hint of llm_calls); the call is not trained, since
// grpo takes a Designer sample only from the env's generating call (envs.call_id).
//
// A call that still fails after the client's retries, or an empty answer, gives an empty hint and a nil
// error: the failure is in the returned call's row, and the env keeps an empty hint. The error is
// non-nil only when the context ended, a replay missed, or the mode is not separate.
func (g *Generator) Hint(ctx context.Context, env schemas.EnvRow) (string, []llm.Call, error) {
	if g.hintTmpl == nil {
		return "", nil, errors.New("generate: Hint needs generate.hint_mode = separate")
	}
	data := HintData{Setting: string(env.Setting), Skill: env.Skill, Code: env.Code, ActionFormat: "boxed",
		Placement: string(g.cfg.Rollout.HintPlacement)}
	if g.cfg.Rollout.ActionFormat != "" {
		data.ActionFormat = string(g.cfg.Rollout.ActionFormat)
	}
	if data.Setting == "" {
		data.Setting = string(g.cfg.Setting)
	}
	prompt, err := RenderHint(g.hintTmpl, data)
	if err != nil {
		return "", nil, err
	}
	comp, err := g.client.Chat(ctx, llm.Request{
		Role: schemas.RoleHint,
		Step: env.PoolStep,
		Key:  hintKey(env.Slot, env.Attempt),
		Messages: []llm.Message{
			{Role: "system", Content: "You write hints for the Agent of SPADE."},
			{Role: "user", Content: prompt},
		},
	})
	if err != nil {
		return "", nil, fmt.Errorf("generate: hint of env %s: %w", env.EnvID, err)
	}
	calls := g.takeCall(comp.CallID)
	if comp.Failed() {
		g.log.Warn("generate: hint call failed; the env keeps an empty hint", "env", env.EnvID, "err", comp.Err)
		return "", calls, nil
	}
	hint, err := ParseHint(comp.Text)
	if err != nil {
		g.log.Warn("generate: no hint in the answer; the env keeps an empty hint", "env", env.EnvID, "err", err)
		return "", calls, nil
	}
	return hint, calls, nil
}
