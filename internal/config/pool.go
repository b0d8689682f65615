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
