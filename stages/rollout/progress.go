package rollout

import (
	"sync"
	"time"

	"github.com/spadekit/spade/internal/progress"
)

// rolloutProgress counts finished episodes on the Env's progress reporter (a bar with the rate and the
// time left on a terminal, log lines otherwise), with turns/s and tokens/s as its note.
type rolloutProgress struct {
	task  *progress.Task
	start time.Time

	mu     sync.Mutex
	turns  int
	tokens int64
}

func newProgress(r *progress.Reporter, total int) *rolloutProgress {
	return &rolloutProgress{task: r.Start("rollout", int64(total), "episodes"), start: time.Now()}
}

// episodeDone counts one finished episode.
func (p *rolloutProgress) episodeDone(turns int, tokens int64) {
	p.mu.Lock()
	p.turns += turns
	p.tokens += tokens
	secs := max(time.Since(p.start).Seconds(), 1e-9)
	turnRate, tokenRate := float64(p.turns)/secs, float64(p.tokens)/secs
	p.mu.Unlock()
	p.task.Note("%.0f turns/s  %.0f tokens/s", turnRate, tokenRate)
	p.task.Add(1)
}

// finish removes the bar.
func (p *rolloutProgress) finish() { p.task.Done() }
