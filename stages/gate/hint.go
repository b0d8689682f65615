package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
)

// Hinter writes the privileged hint of an env the gate accepted, under generate.hint_mode = separate
// (the authors' hint: a separate, untrained call of the Designer's model that reads the accepted
// program); *generate.Generator implements it, and the runner or the CLI hands it in like the
// Regenerator. Hint returns the hint and the calls it made, which the gate commits as the gate-hint
// fragment of llm_calls (schemas.FragmentHint). A call that failed after the client's retries is an
// empty hint with its failure in the returned calls and a nil error: the env is kept with an empty hint
// (as the authors keep the game and count no hint regret for it). An error (context, replay miss) fails
// the stage.
type Hinter interface {
	Hint(ctx context.Context, env schemas.EnvRow) (string, []llm.Call, error)
}

// hintEnvs asks the Hinter for the hint of every accepted env of outcomes, concurrently (the LLM
// client bounds the calls in flight), sets each env's hint and returns the calls, in slot order.
func hintEnvs(ctx context.Context, hinter Hinter, outcomes []slotOutcome, log *slog.Logger) ([]llm.Call, error) {
	calls := make([][]llm.Call, len(outcomes))
	errs := make([]error, len(outcomes))
	var wg sync.WaitGroup
	for i := range outcomes {
		env := outcomes[i].env
		if env == nil {
			continue
		}
		wg.Go(func() {
			hint, own, err := hinter.Hint(ctx, *env)
			if err != nil {
				errs[i] = fmt.Errorf("gate: hint of env %s: %w", env.EnvID, err)
				return
			}
			if hint == "" {
				log.Warn("gate: accepted env has no hint (the hint call failed)", "slot", env.Slot, "env", env.EnvID)
			}
			env.Hint, calls[i] = hint, own
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var all []llm.Call
	for _, c := range calls {
		all = append(all, c...)
	}
	return all, nil
}
