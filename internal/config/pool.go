package config

// A pool is the set of environments generated at a refresh step and played until the next one: steps
// PoolStep(t) .. PoolStep(t)+sample.refresh_every−1. These three methods are the one place that
// arithmetic lives; a refresh_every below 1 counts as 1 (every step is its own pool).

// PoolStep returns the refresh step that started the pool step belongs to: step − step mod refresh_every.
func (c *Config) PoolStep(step int64) int64 {
	return step - step%c.refreshEvery()
}

// PoolEnd reports whether step is the last step of its pool (the step before the next refresh).
func (c *Config) PoolEnd(step int64) bool {
	return step == c.PoolStep(step)+c.refreshEvery()-1
}

// IsRefresh reports whether step starts a pool (a multiple of refresh_every, never negative).
func (c *Config) IsRefresh(step int64) bool {
	return step >= 0 && step%c.refreshEvery() == 0
}

// PoolIndex returns the number of the pool step belongs to (0 for the first pool).
func (c *Config) PoolIndex(step int64) int64 {
	return step / c.refreshEvery()
}

func (c *Config) refreshEvery() int64 { return int64(max(c.Sample.RefreshEvery, 1)) }

// WindowEnd reports whether the regret stage scores step's pool over its window at step: the pool's last
// step, or grpo.final_step when the run ends inside a pool (its window is then the steps played so far).
func (c *Config) WindowEnd(step int64) bool {
	return c.PoolEnd(step) || (c.GRPO.FinalStep >= 0 && step == c.GRPO.FinalStep)
}

// DesignerWindows returns the window ends (steps where WindowEnd holds) whose Designer samples the update
// of step trains, oldest first: under grpo.designer_step pool_end, step itself when it ends a window;
// under next_pool, at a pool's first step the previous pool's last step (unless that pool was already
// trained at grpo.final_step), and at grpo.final_step step itself too, so nothing is left untrained.
func (c *Config) DesignerWindows(step int64) []int64 {
	if c.GRPO.DesignerStep == DesignerPoolEnd {
		if c.WindowEnd(step) {
			return []int64{step}
		}
		return nil
	}
	var ends []int64
	if step > 0 && c.IsRefresh(step) {
		flushed := c.GRPO.FinalStep >= 0 && c.GRPO.FinalStep < step && c.PoolStep(c.GRPO.FinalStep) == c.PoolStep(step-1)
		if !flushed {
			ends = append(ends, step-1)
		}
	}
	if c.GRPO.FinalStep >= 0 && step == c.GRPO.FinalStep {
		ends = append(ends, step)
	}
	return ends
}
