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
// A call that still fails after the client's retries, or an answer with no hint, is made again, up to
// generate.hint_attempts calls in all; when every one failed the env keeps an empty hint and the error is
// nil (the failures are in the returned calls' rows). The error is non-nil only when the context ended,
// a replay missed, or the mode is not separate.
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
	var calls []llm.Call
	for try := 1; ; try++ {
		comp, err := g.client.Chat(ctx, llm.Request{
			Role: schemas.RoleHint,
			Step: env.PoolStep,
			Key:  hintTryKey(env.Slot, env.Attempt, try),
			Messages: []llm.Message{
				{Role: "system", Content: "You write hints for the Agent of SPADE."},
				{Role: "user", Content: prompt},
			},
		})
		if err != nil {
			return "", nil, fmt.Errorf("generate: hint of env %s: %w", env.EnvID, err)
		}
		calls = append(calls, g.takeCall(comp.CallID)...)
		hint, perr := ParseHint(comp.Text)
		switch {
		case comp.Failed():
			perr = errors.New(comp.Err)
		case perr == nil:
			return hint, calls, nil
		}
		if try >= max(g.cfg.Generate.HintAttempts, 1) {
			g.log.Warn("generate: no hint after every attempt; the env keeps an empty hint", "env", env.EnvID, "attempts", try, "err", perr)
			return "", calls, nil
		}
		g.log.Warn("generate: the hint call failed or answered nothing; asking again", "env", env.EnvID, "attempt", try, "err", perr)
	}
}

// hintTryKey is the llm call key of attempt try of an env's hint call: hintKey for the first, so runs
// recorded with a single attempt replay, then ".../try=N".
func hintTryKey(slot, attempt int32, try int) string {
	if try <= 1 {
		return hintKey(slot, attempt)
	}
	return fmt.Sprintf("%s/try=%d", hintKey(slot, attempt), try)
}
