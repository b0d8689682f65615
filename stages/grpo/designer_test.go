package grpo

import (
	"context"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

func TestDesignerAdvScaleByHand(t *testing.T) {
	cases := []struct {
		plays, designs, refresh int
		want                    float64
	}{
		{192, 24, 4, 32},                               // the authors' games setting
		{192, 12, 4, 50},                               // 64 is capped at 50
		{100, 24, 8, 100.0 / 3.0},                      // 33.33…
		{0, 24, 4, 1}, {192, 0, 4, 1}, {192, 24, 0, 1}, // nothing to weigh: the authors' fallback
	}
	for _, c := range cases {
		if got := ComputeDesignerAdvScale(c.plays, c.designs, c.refresh); !close6(got, c.want) {
			t.Errorf("ComputeDesignerAdvScale(%d, %d, %d) = %v, want %v", c.plays, c.designs, c.refresh, got, c.want)
		}
	}
}

// DesignerAdvScale counts the step's unhinted plays and the pool's envs; a number is taken as it is.
func TestDesignerAdvScaleFromTheRun(t *testing.T) {
	var episodes []schemas.EpisodeRow
	for i := range 192 + 16 {
		episodes = append(episodes, schemas.EpisodeRow{EnvID: "e", Hinted: i >= 192})
	}
	envs := make([]schemas.EnvRow, 24)
	for _, tc := range []struct {
		setting string
		want    float64
	}{{"auto", 32}, {"2.5", 2.5}, {"1", 1}} {
		cfg := config.Default()
		cfg.Sample.RefreshEvery = 4
		cfg.GRPO.DesignerAdvScale = tc.setting
		got, err := DesignerAdvScale(cfg, episodes, envs)
		if err != nil || !close6(got, tc.want) {
			t.Errorf("grpo.designer_adv_scale = %s: %v %v, want %v", tc.setting, got, err, tc.want)
		}
	}
	cfg := config.Default()
	cfg.GRPO.DesignerAdvScale = "big"
	if _, err := DesignerAdvScale(cfg, episodes, envs); err == nil || !strings.Contains(err.Error(), "grpo.designer_adv_scale") {
		t.Errorf("a bad value must name the key: %v", err)
	}
}

// designerRows assembles the golden pool's end (step 1) under mutate and returns its Designer advantages by
// env and its agent sample count.
func designerRows(t *testing.T, mutate func(*config.Config)) (map[string]float64, int) {
	t.Helper()
	lk, run := goldenLake(t, mutate)
	cfg, err := lk.RunConfig(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	asm, err := Assemble(context.Background(), lk, run, cfg, 1)
	if err != nil || !asm.PoolEnd {
		t.Fatalf("assemble: pool end %v, %v", asm.PoolEnd, err)
	}
	agent, designer := asm.Agent, asm.Designer
	out := map[string]float64{}
	for _, r := range designer {
		if r.Role != schemas.RoleDesigner {
			t.Errorf("designer sample with role %s", r.Role)
		}
		out[r.EnvID] = r.Advantage
	}
	return out, len(agent)
}

// The golden pool's centred rewards (TestDesignerAdvantageByHand) times the scale: a number, or auto =
// 15 unhinted plays at step 1 / 6 envs × refresh_every 2 = 5.
func TestDesignerAdvantageIsScaled(t *testing.T) {
	centred := map[string]float64{"A": .2791667, "B": -.2708333, "F": -.0083333, "C": .4, "D": -.2, "E": -.2}
	for _, tc := range []struct {
		setting string
		scale   float64
	}{{"1", 1}, {"3", 3}, {"auto", 5}} {
		got, _ := designerRows(t, func(c *config.Config) { c.GRPO.DesignerAdvScale = tc.setting })
		if len(got) != len(centred) {
			t.Fatalf("%s: %d designer samples, want %d", tc.setting, len(got), len(centred))
		}
		for env, c := range centred {
			if !close6(got[env]/tc.scale, c) {
				t.Errorf("grpo.designer_adv_scale = %s: env %s advantage %.7f, want %.7f × %.6f", tc.setting, env, got[env], c, tc.scale)
			}
		}
	}
}

// ablation.no_designer_grad drops the Designer's samples and leaves the Agent's as they are.
func TestNoDesignerGradDropsDesignerSamples(t *testing.T) {
	_, agentWith := designerRows(t, nil)
	got, agentWithout := designerRows(t, func(c *config.Config) { c.Ablation.NoDesignerGrad = true })
	if len(got) != 0 {
		t.Errorf("no_designer_grad: %d designer samples, want none", len(got))
	}
	if agentWithout != agentWith || agentWith == 0 {
		t.Errorf("no_designer_grad changed the agent samples: %d, want %d", agentWithout, agentWith)
	}
}

// copyStep commits step `from`'s episodes, turns and llm_calls again as step `to` (the golden lake has
// two steps; a third is the next pool's first step).
func copyStep(t *testing.T, lk *lake.Lake, run string, from, to int64) {
	t.Helper()
	ctx := context.Background()
	episodes, err := lake.ReadRows[schemas.EpisodeRow](ctx, lk, partition(run, schemas.EpisodesSpec.Name, from))
	if err != nil {
		t.Fatal(err)
	}
	turns, err := lake.ReadRows[schemas.TurnRow](ctx, lk, partition(run, schemas.TurnsSpec.Name, from))
	if err != nil {
		t.Fatal(err)
	}
	calls, err := lake.ReadRows[schemas.LLMCallRow](ctx, lk, partition(run, schemas.LLMCallsSpec.Name, from))
	if err != nil {
		t.Fatal(err)
	}
	for i := range episodes {
		episodes[i].Step = to
	}
	for i := range turns {
		turns[i].Step = to
	}
	for i := range calls {
		calls[i].Step = to
	}
	for _, err := range []error{
		writeErr(laketest.Commit(ctx, lk, partition(run, schemas.EpisodesSpec.Name, to), episodes, lake.WriteOptions{})),
		writeErr(laketest.Commit(ctx, lk, partition(run, schemas.TurnsSpec.Name, to), turns, lake.WriteOptions{})),
		writeErr(laketest.Commit(ctx, lk, partition(run, schemas.LLMCallsSpec.Name, to), calls, lake.WriteOptions{})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeErr(_ lake.WriteResult, err error) error { return err }

// Under grpo.designer_step next_pool (the presets'), the golden pool's Designer samples are not trained
// at its last step (1) but at the next pool's first step (2), with the pool's final rewards read from
// step 1, the same advantages, and the generating calls of step 0. With grpo.final_step 1 they are trained at step 1 instead, and not again at 2.
func TestDesignerSamplesTrainAtTheNextPoolsFirstStep(t *testing.T) {
	ctx := context.Background()
	reference, _ := designerRows(t, nil) // pool_end: the goldens at step 1
	lk, run := goldenLake(t, func(c *config.Config) { c.GRPO.DesignerStep, c.GRPO.FinalStep = config.DesignerNextPool, -1 })
	copyStep(t, lk, run, 1, 2)
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	atEnd, err := Assemble(ctx, lk, run, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !atEnd.PoolEnd || len(atEnd.Designer) != 0 {
		t.Fatalf("step 1 (pool end) under next_pool: pool end %v, %d Designer samples, want none", atEnd.PoolEnd, len(atEnd.Designer))
	}
	next, err := Assemble(ctx, lk, run, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Designer) != len(reference) || len(next.Designer) == 0 {
		t.Fatalf("step 2: %d Designer samples, want the pool's %d", len(next.Designer), len(reference))
	}
	for _, r := range next.Designer {
		want, ok := reference[r.EnvID]
		if !ok || !close6(r.Advantage, want) || r.SampleID != "gen-"+r.EnvID {
			t.Errorf("step 2 sample %s (call %s): advantage %v, want %v (in reference: %v)", r.EnvID, r.SampleID, r.Advantage, want, ok)
		}
	}
	if len(next.DesignerPools) != 1 || next.DesignerPools[0] != 0 {
		t.Errorf("step 2 trains pools %v, want [0]", next.DesignerPools)
	}

	cfg.GRPO.FinalStep = 1
	flushed, err := Assemble(ctx, lk, run, cfg, 1)
	if err != nil || len(flushed.Designer) != len(reference) {
		t.Fatalf("final step 1: %d Designer samples (%v), want %d", len(flushed.Designer), err, len(reference))
	}
	if again, err := Assemble(ctx, lk, run, cfg, 2); err != nil || len(again.Designer) != 0 {
		t.Errorf("after the flush at step 1, step 2 trains %d Designer samples (%v), want none", len(again.Designer), err)
	}
}
