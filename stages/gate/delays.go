package gate

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// turnDelayLookback is how many earlier steps AgentTurnDelays searches for the Agent's calls.
const turnDelayLookback = 8

// callLatency is the part of an llm_calls row AgentTurnDelays reads: the Parquet reader decodes these
// two columns only, not the requests and responses that make up most of a step's calls.
type callLatency struct {
	Role      schemas.Role `parquet:"role"`
	LatencyMS float64      `parquet:"latency_ms"`
}

// AgentTurnDelays returns the Agent's turn latencies (llm_calls.latency_ms of role agent) of the latest
// step before step that has them, within turnDelayLookback steps, each cut to maxDelay, sorted; none
// before any rollout has run. The strict gate draws its probes' waits from them (CheckOptions.TurnDelays).
func AgentTurnDelays(ctx context.Context, lk *lake.Lake, run string, step int64, maxDelay time.Duration) ([]time.Duration, error) {
	for s := step - 1; s >= 0 && s >= step-turnDelayLookback; s-- {
		calls, err := lake.ReadStep[callLatency](ctx, lk, run, schemas.LLMCallsSpec.Name, s)
		if errors.Is(err, lake.ErrNotCommitted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var out []time.Duration
		for _, c := range calls {
			if c.Role == schemas.RoleAgent && c.LatencyMS > 0 {
				out = append(out, min(time.Duration(c.LatencyMS*float64(time.Millisecond)), maxDelay))
			}
		}
		if len(out) > 0 {
			slices.Sort(out)
			return out, nil
		}
	}
	return nil, nil
}
