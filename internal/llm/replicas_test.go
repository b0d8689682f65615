package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// playOf reads the play a request belongs to from its first user message ("play=N").
func playOf(req *llm.ChatRequestBody) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return strings.Fields(m.Content)[0]
		}
	}
	return ""
}

// play makes turns calls of one play under its session, each carrying the conversation so far.
func play(ctx context.Context, t *testing.T, c *llm.Client, id string, turns int) {
	ctx, end := c.Session(ctx, id)
	defer end()
	msgs := []llm.Message{{Role: "user", Content: id + " start"}}
	for turn := range turns {
		comp, err := c.Chat(ctx, llm.Request{Role: schemas.RoleAgent, Step: 1, Key: fmt.Sprintf("%s/turn=%d", id, turn), Messages: msgs})
		if err != nil {
			t.Errorf("%s turn %d: %v", id, turn, err)
			return
		}
		if comp.Failed() {
			t.Errorf("%s turn %d failed: %s", id, turn, comp.Err)
			return
		}
		msgs = append(msgs, llm.Message{Role: "assistant", Content: comp.Text}, llm.Message{Role: "user", Content: "next"})
	}
}

// TestReplicasKeepEveryTurnOfAPlayOnOneReplica: with two replicas in the base URL, every call of a play
// reaches the replica its first call did, and the plays are spread within 10% of even.
func TestReplicasKeepEveryTurnOfAPlayOnOneReplica(t *testing.T) {
	script := func(*llm.ChatRequestBody) llmtest.Reply {
		return llmtest.Reply{Text: "ok", Delay: 5 * time.Millisecond}
	}
	a, b := llmtest.Start(t, script, model), llmtest.Start(t, script, model)
	s := settings(a.URL + "," + b.URL)
	c := newClient(t, s)
	if err := c.Check(context.Background(), schemas.RoleAgent); err != nil {
		t.Fatal(err)
	}
	const plays, turns = 96, 5
	var wg sync.WaitGroup
	for i := range plays {
		wg.Go(func() { play(context.Background(), t, c, fmt.Sprintf("play=%d", i), turns) })
	}
	wg.Wait()
	where := map[string]map[int]int{}
	for i, srv := range []*llmtest.Server{a, b} {
		for _, req := range srv.Requests() {
			p := playOf(&req)
			if where[p] == nil {
				where[p] = map[int]int{}
			}
			where[p][i]++
		}
	}
	if len(where) != plays {
		t.Fatalf("%d plays reached the servers, want %d", len(where), plays)
	}
	for p, on := range where {
		if len(on) != 1 {
			t.Errorf("%s reached %d replicas (%v), want one", p, len(on), on)
		}
	}
	na, nb := a.Count(), b.Count()
	even := float64(plays*turns) / 2
	for _, n := range []int{na, nb} {
		if d := float64(n) - even; d > 0.1*even || d < -0.1*even {
			t.Errorf("replica loads %d and %d, want each within 10%% of %v", na, nb, even)
		}
	}
	if got := c.ReplicaCalls(schemas.RoleAgent); len(got) != 2 || got[0] != int64(na) || got[1] != int64(nb) {
		t.Errorf("ReplicaCalls = %v, want [%d %d]", got, na, nb)
	}
}

// TestFailingReplicaIsTakenOutAndItsPlaysGoOn: a replica that answers 500 is taken out, and the plays
// on it are retried on the other, every call succeeding; later plays avoid it.
func TestFailingReplicaIsTakenOutAndItsPlaysGoOn(t *testing.T) {
	bad := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Status: http.StatusInternalServerError} }, model)
	good := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "ok"} }, model)
	c := newClient(t, settings(bad.URL+", "+good.URL))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { play(context.Background(), t, c, fmt.Sprintf("play=%d", i), 3) })
	}
	wg.Wait()
	if got := good.Count(); got != 20*3 {
		t.Errorf("the healthy replica answered %d calls, want all %d", got, 20*3)
	}
	before := bad.Count()
	if before == 0 || before > 20 {
		t.Errorf("the failing replica got %d calls, want at least one and at most one per play", before)
	}
	play(context.Background(), t, c, "play=late", 3)
	if bad.Count() != before {
		t.Errorf("a play started after the failure reached the failed replica")
	}
}

// TestRetryAfterIsHonoured: a 429 with Retry-After is retried after the wait the server asked for (even
// above the backoff cap), on the same replica, which stays in.
func TestRetryAfterIsHonoured(t *testing.T) {
	var n atomic.Int64
	srv := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply {
		if n.Add(1) == 1 {
			return llmtest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"}
		}
		return llmtest.Reply{Text: "ok"}
	}, model)
	other := llmtest.Start(t, func(*llm.ChatRequestBody) llmtest.Reply { return llmtest.Reply{Text: "ok"} }, model)
	c := newClient(t, settings(srv.URL+","+other.URL))
	ctx, end := c.Session(context.Background(), "play=0")
	defer end()
	start := time.Now()
	comp, err := c.Chat(ctx, llm.Request{Role: schemas.RoleAgent, Step: 1, Key: "k", Messages: []llm.Message{{Role: "user", Content: "play=0"}}})
	if err != nil || comp.Failed() {
		t.Fatalf("call: %v %+v", err, comp)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("retried after %s, want the server's Retry-After of 1 s", waited)
	}
	if comp.Attempts != 2 || srv.Count() != 2 || other.Count() != 0 {
		t.Errorf("attempts %d, busy replica %d calls, other %d; want 2 attempts on the busy replica", comp.Attempts, srv.Count(), other.Count())
	}
}
