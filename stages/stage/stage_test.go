package stage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// recorder is a stage that reads episodes (from rollout) at the step and envs at the pool start, and
// writes designer_rewards; it records the Env it ran with.
type recorder struct {
	refresh bool
	ran     []*stage.Env
	err     error
}

func (r *recorder) Name() stage.Name { return stage.Regret }
func (r *recorder) Reads() []stage.Input {
	return []stage.Input{
		{Table: schemas.EnvsSpec.Name, From: stage.Gate, At: stage.PoolStart},
		{Table: schemas.EpisodesSpec.Name, From: stage.Rollout},
	}
}
func (r *recorder) Writes() []string { return []string{schemas.DesignerRewardsSpec.Name} }
func (r *recorder) Due(cfg *config.Config, step int64) bool {
	return !r.refresh || stage.RefreshDue(cfg, step)
}
func (r *recorder) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	r.ran = append(r.ran, env)
	if r.err != nil {
		return "", r.err
	}
	key := lake.PartitionKey{Run: env.Run, Table: schemas.DesignerRewardsSpec.Name, Step: step}
	if env.Txn == nil {
		return "", errors.New("Run got no transaction")
	}
	_, err := lake.WriteRows[schemas.DesignerRewardRow](ctx, env.Txn, key, nil, lake.WriteOptions{})
	return "scored", err
}

func newEnv(t *testing.T) *stage.Env {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 4
	laketest.NewRun(t, lk, "r", cfg)
	env, err := stage.NewEnv(ctx, lk, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func commitEmpty[T schemas.Row](t *testing.T, env *stage.Env, table string, step int64, fragment string) {
	t.Helper()
	key := lake.PartitionKey{Run: env.Run, Table: table, Step: step, Fragment: fragment}
	if _, err := laketest.Commit[T](context.Background(), env.Lake, key, nil, lake.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Execute rejects bad requests before anything runs, names the stage to run first for each missing
// input (envs at the pool start, episodes at the step; a fragment counts as committed), runs the stage,
// then skips it once its marker is committed, unless forced.
func TestExecuteChecksRunsAndSkips(t *testing.T) {
	ctx := context.Background()
	env := newEnv(t)
	s := &recorder{}
	for name, mutate := range map[string]func(e *stage.Env) int64{
		"negative step":  func(*stage.Env) int64 { return -1 },
		"shard too big":  func(e *stage.Env) int64 { e.Shard = shard.Spec{Index: 3, Count: 3}; return 5 },
		"force on shard": func(e *stage.Env) int64 { e.Shard, e.Force = shard.Spec{Index: 0, Count: 2}, true; return 5 },
	} {
		e := env.WithForce(false)
		step := mutate(e)
		if _, err := stage.Execute(ctx, e, s, step); !errors.Is(err, stage.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := stage.Execute(ctx, env, &recorder{refresh: true}, 5); !errors.Is(err, stage.ErrNotDue) || !strings.Contains(err.Error(), "refresh_every = 4") {
		t.Errorf("not due: %v", err)
	}
	_, err := stage.Execute(ctx, env, s, 5)
	if !errors.Is(err, stage.ErrMissingInput) || !strings.Contains(err.Error(), "run `spade --lake "+env.Lake.URI()+" --run "+env.Run+" gate --step 4` first") {
		t.Fatalf("missing envs: %v", err)
	}
	commitEmpty[schemas.EnvRow](t, env, schemas.EnvsSpec.Name, 4, "")
	_, err = stage.Execute(ctx, env, s, 5)
	if !errors.Is(err, stage.ErrMissingInput) || !strings.Contains(err.Error(), "episodes of step 5") || !strings.Contains(err.Error(), " --run "+env.Run+" rollout --step 5` first") {
		t.Fatalf("missing episodes: %v", err)
	}
	commitEmpty[schemas.EpisodeRow](t, env, schemas.EpisodesSpec.Name, 5, "shard-a")
	if len(s.ran) != 0 {
		t.Fatalf("the stage ran %d times before its inputs were in", len(s.ran))
	}
	out, err := stage.Execute(ctx, env, s, 5)
	if err != nil || out.Skipped || out.Summary != "scored" || len(s.ran) != 1 || s.ran[0].Force {
		t.Fatalf("first run: %+v, %v, ran %d", out, err, len(s.ran))
	}
	out, err = stage.Execute(ctx, env, s, 5)
	if err != nil || !out.Skipped || len(s.ran) != 1 {
		t.Fatalf("second run: %+v, %v; want skipped", out, err)
	}
	out, err = stage.Execute(ctx, env.WithForce(true), s, 5)
	if err != nil || out.Skipped || len(s.ran) != 2 || !s.ran[1].Force {
		t.Fatalf("forced run: %+v, %v", out, err)
	}
}

// With Resume (the runner's mode) a stage that is not done runs forced, so a killed attempt's partial
// commits are replaced; a done stage is still skipped.
func TestExecuteResumeForcesAnUnfinishedStage(t *testing.T) {
	ctx := context.Background()
	env := newEnv(t)
	env.Resume = true
	commitEmpty[schemas.EnvRow](t, env, schemas.EnvsSpec.Name, 0, "")
	commitEmpty[schemas.EpisodeRow](t, env, schemas.EpisodesSpec.Name, 1, "")
	s := &recorder{}
	if _, err := stage.Execute(ctx, env, s, 1); err != nil || len(s.ran) != 1 || !s.ran[0].Force {
		t.Fatalf("resumed run: %v, ran with force = %v", err, len(s.ran) == 1 && s.ran[0].Force)
	}
	if env.Force {
		t.Fatal("Execute changed the caller's Env")
	}
	if out, err := stage.Execute(ctx, env, s, 1); err != nil || !out.Skipped {
		t.Fatalf("done stage under Resume: %+v, %v", out, err)
	}
	s.err = errors.New("boom")
	commitEmpty[schemas.EpisodeRow](t, env, schemas.EpisodesSpec.Name, 2, "")
	if _, err := stage.Execute(ctx, env, s, 2); !errors.Is(err, s.err) {
		t.Fatalf("the stage's error: %v", err)
	}
}

func TestWeightsVersionIsTheNewestBeforeTheStep(t *testing.T) {
	ctx := context.Background()
	env := newEnv(t)
	for step, version := range map[int64]string{0: "r-step000000", 2: "r-step000002"} {
		rows := []schemas.TrainMetricsRow{{Step: step, Role: schemas.RoleAgent, WeightsVersion: version}}
		if _, err := laketest.Commit(ctx, env.Lake, lake.PartitionKey{Run: env.Run, Table: schemas.TrainMetricsSpec.Name, Step: step}, rows, lake.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for step, want := range map[int64]string{0: "", 1: "r-step000000", 2: "r-step000000", 3: "r-step000002"} {
		if got, err := stage.WeightsVersion(ctx, env.Lake, env.Run, env.Config, step); err != nil || got != want {
			t.Errorf("WeightsVersion(%d) = %q, %v; want %q", step, got, err, want)
		}
	}
	// With grpo.publish = none the server keeps the base model.
	env.Config.GRPO.Publish = "none"
	if got, err := stage.WeightsVersion(ctx, env.Lake, env.Run, env.Config, 3); err != nil || got != "" {
		t.Fatalf("grpo.publish = none: WeightsVersion = %q, %v; want the base model", got, err)
	}
}

func TestSandboxOptionsSetEveryDeadline(t *testing.T) {
	cfg := config.Default()
	o := stage.SandboxOptions(cfg)
	if o.LoadTimeout <= 0 || o.ResetTimeout != o.LoadTimeout || o.StepTimeout <= 0 || o.AddressSpace <= 0 || o.ObservationCap <= 0 {
		t.Fatalf("options %+v leave a deadline or limit unset", o)
	}
}
