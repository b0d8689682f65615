package gate

import (
	"context"
	"fmt"
	"log/slog"

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

// hintEnv asks the Hinter for the hint of an accepted env, sets it, and returns the calls it made.
func hintEnv(ctx context.Context, hinter Hinter, env *schemas.EnvRow, log *slog.Logger) ([]llm.Call, error) {
	hint, calls, err := hinter.Hint(ctx, *env)
	if err != nil {
		return nil, fmt.Errorf("gate: hint of env %s: %w", env.EnvID, err)
	}
	if hint == "" {
		log.Warn("gate: accepted env has no hint (the hint call failed)", "slot", env.Slot, "env", env.EnvID)
	}
	env.Hint = hint
	return calls, nil
}
