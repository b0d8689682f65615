package run

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/synth"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// summaryLake is a synthetic rollout run (envs, episodes, llm_calls with the Designer's calls at pool
// steps) with train_metrics at step 1 for both roles.
func summaryLake(t *testing.T) (*lake.Lake, string) {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	o := synth.SmallRollout()
	o.Steps = 3
	if err := synth.WriteRollout(ctx, lk, "r", o); err != nil {
		t.Fatal(err)
	}
	laketest.Write(t, lk, lake.PartitionKey{Run: "r", Table: schemas.TrainMetricsSpec.Name, Step: 1}, []schemas.TrainMetricsRow{
		{Step: 1, Role: schemas.RoleAgent, Loss: 0.0123, Tokens: 10},
		{Step: 1, Role: schemas.RoleDesigner, Loss: -0.5, Tokens: 10},
	})
	return lk, "r"
}

// The per-step summary equals what DuckDB computes from the lake: accepted envs, solve rates per side,
// the regret_curve model's per-step regret, the step's losses and tokens per role.
func TestStepSummaryMatchesTheLake(t *testing.T) {
	ctx := context.Background()
	lk, run := summaryLake(t)
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := analytics.OpenRuns(ctx, lk, run)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for step := int64(0); step < 3; step++ {
		s, err := Summarize(ctx, lk, run, cfg, step)
		if err != nil {
			t.Fatal(err)
		}
		var accepted, agentTokens, designerTokens int64
		var nohint, hint, regret float64
		var regretEnvs int
		q := fmt.Sprintf(`select
			(select count(*) from envs where step = %[2]d),
			(select avg(success::double) from episodes where step = %[1]d and not hinted and ended_by not in ('env_error', 'timeout')),
			(select avg(success::double) from episodes where step = %[1]d and hinted and ended_by not in ('env_error', 'timeout')),
			(select regret from regret_curve where step = %[1]d),
			(select envs from regret_curve where step = %[1]d),
			(select sum(tokens) from episodes where step = %[1]d),
			(select coalesce(sum(prompt_tokens + completion_tokens), 0) from llm_calls where step = %[1]d and role = 'designer')`,
			step, cfg.PoolStep(step))
		if err := sess.DB.QueryRowContext(ctx, q).Scan(&accepted, &nohint, &hint, &regret, &regretEnvs, &agentTokens, &designerTokens); err != nil {
			t.Fatal(err)
		}
		if int64(s.Accepted) != accepted || s.AgentTokens != agentTokens || s.DesignerTokens != designerTokens ||
			math.Abs(s.NoHint-nohint) > 1e-12 || math.Abs(s.Hint-hint) > 1e-12 ||
			math.Abs(s.Regret-regret) > 1e-9 || s.RegretEnvs != regretEnvs {
			t.Errorf("step %d: summary %+v, DuckDB accepted %d solve %g/%g regret %g over %d tokens %d/%d",
				step, s, accepted, nohint, hint, regret, regretEnvs, agentTokens, designerTokens)
		}
		if step == 0 && designerTokens == 0 {
			t.Errorf("step 0 is a pool step: the Designer's tokens should be there")
		}
		wantLoss := map[int64]string{0: "loss —", 1: "loss agent 0.0123, designer -0.5", 2: "loss —"}[step]
		if line := s.Line(); !strings.Contains(line, wantLoss) || strings.Contains(line, "map[") {
			t.Errorf("step %d line %q lacks %q", step, line, wantLoss)
		}
	}
}

// spade run prints one line per step, once its stages are done, with the figures of the step.
func TestRunPrintsOneLinePerStep(t *testing.T) {
	ctx := context.Background()
	lk, run := summaryLake(t)
	env, err := stage.NewEnv(ctx, lk, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	var after []int64
	_, err = Run(ctx, env, []int64{0, 1, 2}, Options{StepLines: &lines, AfterStep: func(_ context.Context, s StepSummary) error {
		after = append(after, s.Step)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(lines.String()), "\n")
	if len(got) != 3 || len(after) != 3 {
		t.Fatalf("want 3 lines and 3 AfterStep calls, got %d lines %q and %v", len(got), got, after)
	}
	s1, err := Summarize(ctx, lk, run, env.Config, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("step 1 (pool 0): %d envs accepted · solve rate %.1f%% unhinted / %.1f%% hinted · regret %+.3f over %d envs · loss agent 0.0123, designer -0.5 · tokens ",
		s1.Accepted, 100*s1.NoHint, 100*s1.Hint, s1.Regret, s1.RegretEnvs)
	if !strings.HasPrefix(got[1], want) || !strings.HasSuffix(got[1], " designer · already done") {
		t.Errorf("line of step 1:\n%s\nwant it to start with\n%s", got[1], want)
	}
}
