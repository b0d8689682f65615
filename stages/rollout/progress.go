package rollout

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/spadekit/spade/internal/llm"

	"github.com/spadekit/spade/internal/progress"
)

// rolloutProgress counts finished episodes on the Env's progress reporter (a bar with the rate and the
// time left on a terminal, log lines otherwise), with turns/s, tokens/s, the plays and model calls in
// flight and the server's median latency as its note: plays in flight well above calls in flight means
// spade (the sandbox) is the bottleneck, calls in flight near the plays with a rising latency the server.
type rolloutProgress struct {
	task   *progress.Task
	start  time.Time
	client *llm.Client
	// playing counts the plays in flight, peak the most at once.
	playing, peak atomic.Int64

	mu     sync.Mutex
	turns  int
	tokens int64
}

func newProgress(r *progress.Reporter, total int, client *llm.Client) *rolloutProgress {
	p := &rolloutProgress{task: r.Start("rollout", int64(total), "episodes"), start: time.Now(), client: client}
	p.task.Refresh(time.Second, p.note) // (while no episode ends)
	return p
}

// playStarted and playEnded count the plays in flight.
func (p *rolloutProgress) playStarted() {
	n := p.playing.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			return
		}
	}
}

func (p *rolloutProgress) playEnded() { p.playing.Add(-1) }

// episodeDone counts one finished episode.
func (p *rolloutProgress) episodeDone(turns int, tokens int64) {
	p.mu.Lock()
	p.turns += turns
	p.tokens += tokens
	p.mu.Unlock()
	p.note()
	p.task.Add(1)
}

// note writes the rates and what is in flight.
func (p *rolloutProgress) note() {
	p.mu.Lock()
	secs := max(time.Since(p.start).Seconds(), 1e-9)
	turnRate, tokenRate := float64(p.turns)/secs, float64(p.tokens)/secs
	p.mu.Unlock()
	load := p.client.Load()
	p.task.Note("%.0f turns/s  %.0f tokens/s  %d plays, %d calls in flight  median %s", turnRate, tokenRate,
		p.playing.Load(), load.Calls, load.MedianLatency.Round(time.Millisecond))
}

// finish removes the bar.
func (p *rolloutProgress) finish() { p.task.Done() }
