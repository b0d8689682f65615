// Package stage is the contract every stage of a step implements, and the one place that runs a stage:
// the eight stage commands and `spade run` all go through Execute.
//
// A stage names the tables it reads (and the stage that commits each), the tables it writes (the last
// one marks it done at a step), when it is due, and how it runs at a step given an Env. Execute checks the
// step and the shard, skips a stage that is already done, turns a missing input into "run `spade X --step
// N` first", runs it and logs its closing line. See docs/architecture.md, "Stages".
package stage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
)

// Name names a stage of a step.
type Name string

// The stages of a step, in the order they run.
const (
	Sample   Name = "sample"
	Generate Name = "generate"
	Gate     Name = "gate"
	Rollout  Name = "rollout"
	Regret   Name = "regret"
	GRPO     Name = "grpo"
)

// Order is the stage order of a step.
var Order = []Name{Sample, Generate, Gate, Rollout, Regret, GRPO}

// At says at which step of the run a stage reads an input table, given the step it runs at.
type At int

const (
	// SameStep reads the input at the stage's own step.
	SameStep At = iota
	// PoolStart reads the input at the refresh step that started the step's pool (config.PoolStep).
	PoolStart
)

// Input is a table a stage needs at a step, and the stage that commits it.
type Input struct {
	// Table is the table's name (schemas.*Spec.Name).
	Table string
	// From is the stage that writes it: a missing input tells the user to run that stage first.
	From Name
	// At is the step the table is read at.
	At At
}

// Stage is one stage of a step.
type Stage interface {
	// Name is the stage's command name.
	Name() Name
	// Reads lists the tables the stage cannot run without (optional inputs, such as the memory of an
	// earlier pool, are not listed).
	Reads() []Input
	// Writes lists the tables the stage commits at its step (all in one record); the last one marks the
	// stage done at that step.
	Writes() []string
	// Due reports whether the stage runs at step under cfg (the refresh stages run at pool starts only).
	Due(cfg *config.Config, step int64) bool
	// Run runs the stage at step and returns its closing line (what it did, without the stage's name
	// and the step). It is called only through Execute, which has checked the step, the shard and the
	// inputs, and only when the stage is not done or env.Force is set. Every row it writes goes into
	// env.Txn (lake.WriteRows), which Execute commits when Run returns and aborts when it fails.
	Run(ctx context.Context, env *Env, step int64) (string, error)
}

// Marker returns the table whose committed partition at a step means the stage is done there.
func Marker(s Stage) string {
	w := s.Writes()
	return w[len(w)-1]
}

// RefreshDue is the Due of the refresh stages (sample, generate, gate): step starts a pool and the run
// generates its envs (sample.pool is empty).
func RefreshDue(cfg *config.Config, step int64) bool {
	return cfg.IsRefresh(step) && cfg.Sample.Pool == ""
}

// PoolDue is the Due of the stage that takes a refresh step's envs from an imported pool: step starts a
// pool and sample.pool names one (fixed-environment GRPO).
func PoolDue(cfg *config.Config, step int64) bool {
	return cfg.IsRefresh(step) && cfg.Sample.Pool != ""
}

// EveryStep is the Due of the stages that run at every step.
func EveryStep(*config.Config, int64) bool { return true }

// ErrMissingInput wraps the error of a stage run before the stage that writes its input.
var ErrMissingInput = errors.New("input not committed")

// ErrNotDue wraps the error of a stage asked to run at a step where it is not due.
var ErrNotDue = errors.New("stage not due at this step")

// ErrInvalid wraps a bad step or shard request (the CLI maps it to the usage exit code).
var ErrInvalid = errors.New("invalid stage request")

// Outcome is what Execute did.
type Outcome struct {
	// Skipped is true when the stage was already done at the step and env.Force was not set.
	Skipped bool
	// Summary is the stage's closing line (empty when skipped).
	Summary string
	// Elapsed is the wall time of the stage's Run.
	Elapsed time.Duration
}

// Execute runs stage s at step for env inside one lake transaction (lake.Txn: what the stage writes at
// step becomes visible at once when Run returns, or not at all): it rejects a negative step, an invalid shard and --force on a
// shard (ErrInvalid); rejects a step where the stage is not due (ErrNotDue); returns Skipped when the
// stage's marker is committed at step and env.Force is unset; fails with ErrMissingInput, naming the
// stage to run first, when an input is missing; otherwise runs the stage and logs its closing line.
// Errors are prefixed with the stage's name.
func Execute(ctx context.Context, env *Env, s Stage, step int64) (Outcome, error) {
	name := s.Name()
	if err := checkRequest(env, step); err != nil {
		return Outcome{}, fmt.Errorf("%s: %w: %w", name, ErrInvalid, err)
	}
	if !s.Due(env.Config, step) && env.Config.IsRefresh(step) {
		if env.Config.Sample.Pool != "" {
			return Outcome{}, fmt.Errorf("%s: %w: the run takes its envs from pool %q (sample.pool), so nothing is generated at step %d; the pool stage writes them",
				name, ErrNotDue, env.Config.Sample.Pool, step)
		}
		return Outcome{}, fmt.Errorf("%s: %w: the run generates its envs (sample.pool is empty)", name, ErrNotDue)
	}
	if !s.Due(env.Config, step) {
		return Outcome{}, fmt.Errorf("%s: %w: step %d is not a pool refresh step (sample.refresh_every = %d; refresh steps are multiples of it)",
			name, ErrNotDue, step, env.Config.Sample.RefreshEvery)
	}
	done, err := env.Lake.Committed(ctx, lake.PartitionKey{Run: env.Run, Table: Marker(s), Step: step})
	if err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", name, err)
	}
	if done && !env.Force {
		env.Logger().Info(string(name)+": already committed", "run", env.Run, "step", step)
		return Outcome{Skipped: true}, nil
	}
	if err := checkInputs(ctx, env, s, step); err != nil {
		return Outcome{}, err
	}
	runEnv := env
	if env.Resume && !done {
		runEnv = env.WithForce(true)
	}
	began := time.Now()
	summary, err := Within(ctx, runEnv, name, step, s.Run)
	out := Outcome{Summary: summary, Elapsed: time.Since(began)}
	if err != nil {
		return out, err
	}
	env.Logger().Info(string(name)+": done", "run", env.Run, "step", step, "shard", env.Shard.Index, "shards", env.Shard.Shards(),
		"seconds", out.Elapsed.Seconds(), "summary", summary)
	return out, nil
}

// Within runs run at step with a copy of env whose Txn is a new transaction of stage name at step (as
// env's shard, forced when env.Force is set), and commits it when run returns, or aborts it when run
// fails: everything run writes becomes visible at once, or not at all. Execute runs every stage through
// it; a caller that drives a stage's own Run function (a test, a benchmark) uses it directly.
func Within[R any](ctx context.Context, env *Env, name Name, step int64, run func(context.Context, *Env, int64) (R, error)) (R, error) {
	tx := env.Lake.Begin(lake.TxnSpec{Run: env.Run, Stage: string(name), Step: step,
		Shard: env.Shard.Index, Shards: env.Shard.Shards(), Force: env.Force})
	out, err := run(ctx, env.withTxn(tx), step)
	if err != nil {
		tx.Abort(context.WithoutCancel(ctx))
		return out, err
	}
	if _, err := tx.Commit(context.WithoutCancel(ctx)); err != nil {
		return out, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// checkRequest validates the step and the shard of a request.
func checkRequest(env *Env, step int64) error {
	if step < 0 {
		return fmt.Errorf("--step must be >= 0, got %d", step)
	}
	if err := env.Shard.Validate(); err != nil {
		return err
	}
	if env.Shard.Sharded() && env.Force {
		return errors.New("--force replaces a whole partition and needs --shards 1")
	}
	return nil
}

// checkInputs fails with ErrMissingInput for the first input of s that has nothing committed at its
// step (neither the plain partition nor any fragment).
func checkInputs(ctx context.Context, env *Env, s Stage, step int64) error {
	for _, in := range s.Reads() {
		at := step
		if in.At == PoolStart {
			at = env.Config.PoolStep(step)
		}
		parts, err := env.Lake.StepPartitions(ctx, env.Run, in.Table, at)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name(), err)
		}
		if len(parts) == 0 {
			return fmt.Errorf("%s: %w: %s of step %d of run %s (run `%s` first)",
				s.Name(), ErrMissingInput, in.Table, at, env.Run, Command(env.Lake, env.Run, string(in.From), "--step", strconv.FormatInt(at, 10)))
		}
	}
	return nil
}
