package grpo

import (
	"context"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
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
