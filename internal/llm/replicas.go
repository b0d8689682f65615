package llm

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spadekit/spade/schemas"
)

// ReplicaCooloff is how long a replica that failed a call (a connection error or a 5xx other than 503)
// stays out of a role's list before new plays may go to it again.
const ReplicaCooloff = 30 * time.Second

// SplitBaseURLs returns the replicas of a base URL setting: the comma-separated URLs, trimmed, empty
// ones left out. One URL (a single server, or a router such as SGLang's in front of several) is a list
// of one.
func SplitBaseURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// sessionKey is the context key of a play's session (Client.Session).
type sessionKey struct{}

// Session returns ctx marked as one play's: every call made under it goes to the replica its first
// call went to (so the server's prefix cache holds the play's conversation), until that replica fails
// and the play moves to another. end releases the play's place, which counts as load until then; call
// it once the play is over. An empty id returns ctx unmarked.
func (c *Client) Session(ctx context.Context, id string) (context.Context, func()) {
	if id == "" {
		return ctx, func() {}
	}
	return context.WithValue(ctx, sessionKey{}, id), func() {
		for _, b := range c.backends {
			if hb, ok := b.(*httpBackend); ok {
				hb.bal.end(id)
			}
		}
	}
}

func sessionOf(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// replica is one server of a role.
type replica struct {
	url string
	// slots bounds the calls in flight to this server (llm.server_max_in_flight).
	slots chan struct{}
	// sessions counts the plays assigned here, loose the calls in flight outside any play; downUntil
	// is when a failed replica may take new plays again. All three are under the balancer's mu.
	sessions, loose int
	downUntil       time.Time
	// calls counts every call sent here (for tests and the progress line).
	calls atomic.Int64
}

// balancer spreads a role's plays over its replicas: a play's calls stay on one replica, a new play
// goes to the replica with the fewest plays (and loose calls) among those up, and a failed replica is
// left out for ReplicaCooloff.
type balancer struct {
	mu       sync.Mutex
	replicas []*replica
	sessions map[string]*replica
	now      func() time.Time
}

func newBalancer(urls []string, perServer int) *balancer {
	b := &balancer{sessions: map[string]*replica{}, now: time.Now}
	for _, u := range urls {
		b.replicas = append(b.replicas, &replica{url: u, slots: make(chan struct{}, perServer)})
	}
	return b
}

// pick returns the replica for a call of session ("" for a call outside any play) and counts the
// call's load; the caller calls done with it when the call is over.
func (b *balancer) pick(session string) (r *replica, done func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if session != "" {
		if r, ok := b.sessions[session]; ok && !now.Before(r.downUntil) {
			return r, func() {}
		}
		if r, ok := b.sessions[session]; ok {
			r.sessions--
			delete(b.sessions, session)
		}
	}
	r = b.leastLoaded(now)
	if session != "" {
		r.sessions++
		b.sessions[session] = r
		return r, func() {}
	}
	r.loose++
	return r, func() {
		b.mu.Lock()
		r.loose--
		b.mu.Unlock()
	}
}

// leastLoaded returns the replica up with the least load (the first of equals), or, when every one is
// out, the one that comes back first; the caller holds b.mu.
func (b *balancer) leastLoaded(now time.Time) *replica {
	var best *replica
	for _, r := range b.replicas {
		if now.Before(r.downUntil) {
			continue
		}
		if best == nil || r.sessions+r.loose < best.sessions+best.loose {
			best = r
		}
	}
	if best != nil {
		return best
	}
	best = b.replicas[0]
	for _, r := range b.replicas[1:] {
		if r.downUntil.Before(best.downUntil) {
			best = r
		}
	}
	return best
}

// fail takes r out for ReplicaCooloff when another replica is up, so that the plays on it move at
// their next call; it reports whether it did (a lone replica stays: there is nowhere else to go).
func (b *balancer) fail(r *replica) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	up := 0
	for _, o := range b.replicas {
		if o != r && !now.Before(o.downUntil) {
			up++
		}
	}
	if up == 0 {
		return false
	}
	r.downUntil = now.Add(ReplicaCooloff)
	return true
}

// end releases session's place.
func (b *balancer) end(session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.sessions[session]; ok {
		r.sessions--
		delete(b.sessions, session)
	}
}

// latencies keeps the latest call latencies of a client, for their median.
type latencies struct {
	mu   sync.Mutex
	ring [256]time.Duration
	n    int
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ring[l.n%len(l.ring)] = d
	l.n++
	l.mu.Unlock()
}

// median returns the median of the latest (up to 256) latencies, 0 before any.
func (l *latencies) median() time.Duration {
	l.mu.Lock()
	got := slices.Clone(l.ring[:min(l.n, len(l.ring))])
	l.mu.Unlock()
	if len(got) == 0 {
		return 0
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	return got[len(got)/2]
}

// Load is what a client has in flight now and how fast its servers answer.
type Load struct {
	// Calls is the calls in flight, over every role.
	Calls int
	// MedianLatency is the median wall time of the latest (up to 256) HTTP attempts that answered.
	MedianLatency time.Duration
}

// Load returns the client's calls in flight and its servers' median latency.
func (c *Client) Load() Load {
	return Load{Calls: int(c.calling.Load()), MedianLatency: c.latency.median()}
}

// ReplicaCalls returns, for each replica of role in the order of its base URL setting, how many calls
// were sent to it (nil for a replayed or unconfigured role).
func (c *Client) ReplicaCalls(role schemas.Role) []int64 {
	if hb, ok := c.backends[role].(*httpBackend); ok {
		out := make([]int64, len(hb.bal.replicas))
		for i, rep := range hb.bal.replicas {
			out[i] = rep.calls.Load()
		}
		return out
	}
	return nil
}
