package run

import (
	"context"

	"github.com/spadekit/spade/stages/eval"
	"github.com/spadekit/spade/stages/gate"
	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/grpo"
	"github.com/spadekit/spade/stages/pool"
	"github.com/spadekit/spade/stages/regret"
	"github.com/spadekit/spade/stages/rollout"
	"github.com/spadekit/spade/stages/sample"
	"github.com/spadekit/spade/stages/stage"
)

// Stages returns the real stages of a step in order (pool, due only in a run with sample.pool set, takes
// the place of sample, generate and gate). They share the Env's dependencies: generate, the gate's
// regenerations and hint calls, and rollout call the newest trained weights before the step through one
// LLM client per weights version (a replay client loads its recorded run once), and the gate and rollout
// run programs in one sandbox pool. The evaluation comes last, due every eval.every steps (never by
// default); it commits only fragments (one per benchmark chunk), so Execute always calls it and, under
// the runner's Resume, it skips the chunks an earlier attempt committed.
func Stages() []stage.Stage {
	return []stage.Stage{sample.Stage{}, pool.Stage{}, generate.Stage{}, gate.Stage{NewRegenerator: Regenerator, NewHinter: Hinter}, rollout.Stage{}, regret.Stage{}, grpo.Stage{},
		eval.Stage{Periodic: true}}
}

// Regenerator is how the gate asks the Designer again for a failed slot: generate's Generator for the
// step, on env's client.
func Regenerator(ctx context.Context, env *stage.Env, step int64) (gate.Regenerator, error) {
	return generate.NewGenerator(ctx, env, step)
}

// Hinter is how the gate has the hints of accepted envs written under generate.hint_mode = separate:
// generate's Generator for the step, on env's client (role hint).
func Hinter(ctx context.Context, env *stage.Env, step int64) (gate.Hinter, error) {
	return generate.NewGenerator(ctx, env, step)
}
