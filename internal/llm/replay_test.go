package llm

import (
	"context"
	"testing"

	"github.com/spadekit/spade/schemas"
)

// Two recorded calls that sent the same body (a tokenize of an observation two episodes share) each
// replay their own record, found by call id; a call the run never made with that id takes the body's.
func TestReplaySameBodyTwoCalls(t *testing.T) {
	a := Call{CallID: CallID(schemas.RoleAgent, 0, "ep-a/obs"), Role: schemas.RoleAgent, Key: "ep-a/obs", RequestHash: "h", Outcome: Outcome{LatencyMS: 2}}
	b := Call{CallID: CallID(schemas.RoleAgent, 0, "ep-b/obs"), Role: schemas.RoleAgent, Key: "ep-b/obs", RequestHash: "h", Outcome: Outcome{LatencyMS: 0}}
	rb := newReplayBackend("r", []Call{a, b})
	for key, want := range map[string]int64{"ep-a/obs": 2, "ep-b/obs": 0, "ep-c/obs": 2} {
		out, err := rb.complete(context.Background(), 0, &Request{Role: schemas.RoleAgent, Key: key}, nil, "h")
		if err != nil || out.LatencyMS != want {
			t.Errorf("%s: latency %d, %v; want %d", key, out.LatencyMS, err, want)
		}
	}
}
