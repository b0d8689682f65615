package llm

import (
	"math"
	"time"
)

// RetryDelay returns the wait before retry n (n ≥ 1) with exponential backoff and full jitter:
// delay = u · min(max, base · 2^(n−1)), u uniform in [0, 1) (the "full jitter" of the AWS architecture
// note). u = 0 gives no wait; n < 1 is treated as 1.
func RetryDelay(n int, base, max time.Duration, u float64) time.Duration {
	if n < 1 {
		n = 1
	}
	ceiling := float64(base) * math.Pow(2, float64(n-1))
	if ceiling > float64(max) || math.IsInf(ceiling, 1) {
		ceiling = float64(max)
	}
	return time.Duration(u * ceiling)
}
