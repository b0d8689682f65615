package config

import (
	"slices"
	"testing"
)

// TestDesignerWindows pins the step at which each pool's Designer samples are trained: under next_pool
// (the authors' proposer delay, equal to the refresh interval) at the next pool's first step, and at the
// final step whatever still waits; under pool_end at the pool's last step.
func TestDesignerWindows(t *testing.T) {
	cases := []struct {
		name    string
		refresh int
		final   int64
		when    DesignerStep
		step    int64
		want    []int64
	}{
		{"first step trains nothing", 4, 399, DesignerNextPool, 0, nil},
		{"pool end trains nothing yet", 4, 399, DesignerNextPool, 3, nil},
		{"next pool's first step trains the previous pool", 4, 399, DesignerNextPool, 4, []int64{3}},
		{"mid pool", 4, 399, DesignerNextPool, 6, nil},
		{"final step that ends a pool flushes it", 4, 399, DesignerNextPool, 399, []int64{399}},
		{"4B tools: 400 steps end inside pool 384", 32, 399, DesignerNextPool, 399, []int64{399}},
		{"4B tools: pool 352 trained at 384", 32, 399, DesignerNextPool, 384, []int64{383}},
		{"final step on a refresh step trains both pools", 4, 8, DesignerNextPool, 8, []int64{7, 8}},
		{"a pool flushed at the final step is not trained again", 4, 5, DesignerNextPool, 8, nil},
		{"no final step", 4, -1, DesignerNextPool, 400, []int64{399}},
		{"pool_end at a pool's last step", 4, 399, DesignerPoolEnd, 7, []int64{7}},
		{"pool_end elsewhere", 4, 399, DesignerPoolEnd, 8, nil},
		{"pool_end at a final step inside a pool", 32, 399, DesignerPoolEnd, 399, []int64{399}},
		{"every step its own pool", 1, -1, DesignerNextPool, 5, []int64{4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Sample.RefreshEvery, c.GRPO.FinalStep, c.GRPO.DesignerStep = tc.refresh, tc.final, tc.when
			if got := c.DesignerWindows(tc.step); !slices.Equal(got, tc.want) {
				t.Errorf("DesignerWindows(%d) = %v, want %v", tc.step, got, tc.want)
			}
		})
	}
}

// TestWindowEnd: the regret stage scores a window at a pool's last step and at the final step.
func TestWindowEnd(t *testing.T) {
	c := Default()
	c.Sample.RefreshEvery, c.GRPO.FinalStep = 32, 399
	for step, want := range map[int64]bool{31: true, 32: false, 383: true, 398: false, 399: true} {
		if got := c.WindowEnd(step); got != want {
			t.Errorf("WindowEnd(%d) = %v, want %v", step, got, want)
		}
	}
	c.GRPO.FinalStep = -1
	if c.WindowEnd(399) {
		t.Error("WindowEnd(399) without a final step: want false (399 is not a pool end at refresh 32)")
	}
}
