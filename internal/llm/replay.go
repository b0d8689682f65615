package llm

import (
	"context"
	"fmt"
	"strings"

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
	// servers is the server each role's recorded requests were encoded for.
	servers map[schemas.Role]Server
	// first and last are the first and the last step of the recording (of any role's calls).
	first, last int64
}

func newReplayBackend(run string, calls []Call) *replayBackend {
	rb := &replayBackend{run: run, byHash: make(map[string]Outcome, len(calls)), byID: make(map[string]Call, len(calls)), roles: map[schemas.Role]int{},
		servers: map[schemas.Role]Server{}}
	for i, c := range calls {
		if i == 0 || c.Step < rb.first {
			rb.first = c.Step
		}
		if i == 0 || c.Step > rb.last {
			rb.last = c.Step
		}
		if sglangRequest(c.RequestJSON) {
			rb.servers[c.Role] = ServerSGLang
		} else if rb.servers[c.Role] == "" {
			rb.servers[c.Role] = ServerVLLM
		}
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
	if !ok && len(rb.byID) > 0 && (req.Step > rb.last || req.Step < rb.first) {
		return Outcome{}, &ReplayEndError{Run: rb.run, Role: req.Role, Step: req.Step, First: rb.first, Last: rb.last}
	}
	if !ok {
		return Outcome{}, &ReplayMissError{Run: rb.run, Role: req.Role, Step: req.Step, RequestPrefix: prefix(string(body), 240)}
	}
	return out, nil
}

// check says which server the recording talked to: SGLang when a recorded request asked for its
// extensions (return_meta_info), else vLLM.
func (rb *replayBackend) check(_ context.Context, role schemas.Role) (Server, error) {
	if rb.roles[role] == 0 {
		return "", fmt.Errorf("llm: %s: replay run %q has no recorded %s calls", role, rb.run, role)
	}
	return rb.servers[role], nil
}

// sglangRequest reports whether a recorded request body was encoded for SGLang (its chat extension
// return_meta_info, or a /generate body).
func sglangRequest(body string) bool {
	return strings.Contains(body, `"return_meta_info":true`) || strings.HasPrefix(body, `{"input_ids":`)
}
