package llm

import (
	"context"
	"fmt"

	"github.com/spadekit/spade/schemas"
)

// replayBackend answers from a recorded run's calls, keyed by the SHA-256 of the request body. Two calls
// may send the same body (a tokenize call of an observation two episodes share): then the call's own
// record, found by its id, answers it, so every recorded field (latency included) replays as it was.
type replayBackend struct {
	run    string
	byHash map[string]Outcome
	byID   map[string]Call
	roles  map[schemas.Role]int
}

func newReplayBackend(run string, calls []Call) *replayBackend {
	rb := &replayBackend{run: run, byHash: make(map[string]Outcome, len(calls)), byID: make(map[string]Call, len(calls)), roles: map[schemas.Role]int{}}
	for _, c := range calls {
		rb.byID[c.CallID] = c
		if _, dup := rb.byHash[c.RequestHash]; !dup {
			rb.byHash[c.RequestHash] = c.Outcome
		}
		rb.roles[c.Role]++
	}
	return rb
}

func (rb *replayBackend) complete(_ context.Context, _ callKind, req *Request, body []byte, hash string) (Outcome, error) {
	if own, ok := rb.byID[CallID(req.Role, req.Step, req.Key)]; ok && own.RequestHash == hash {
		return own.Outcome, nil
	}
	out, ok := rb.byHash[hash]
	if !ok {
		return Outcome{}, &ReplayMissError{Run: rb.run, Role: req.Role, Step: req.Step, RequestPrefix: prefix(string(body), 240)}
	}
	return out, nil
}

func (rb *replayBackend) check(_ context.Context, role schemas.Role) error {
	if rb.roles[role] == 0 {
		return fmt.Errorf("llm: %s: replay run %q has no recorded %s calls", role, rb.run, role)
	}
	return nil
}
