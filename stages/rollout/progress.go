package rollout

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// progress reports episodes done, turns/s and tokens/s: a redrawn bar on a terminal, a log line every
// ten seconds otherwise.
type progress struct {
	out   io.Writer
	log   *slog.Logger
	total int
	start time.Time

	mu       sync.Mutex
	episodes int
	turns    int
	tokens   int64
	last     time.Time
}

func newProgress(out io.Writer, log *slog.Logger, total int) *progress {
	now := time.Now()
	return &progress{out: out, log: log, total: total, start: now, last: now}
}

// episodeDone counts one finished episode and redraws when due.
func (p *progress) episodeDone(turns int, tokens int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.episodes++
	p.turns += turns
	p.tokens += tokens
	now := time.Now()
	interval := 10 * time.Second
	if p.out != nil {
		interval = 200 * time.Millisecond
	}
	if now.Sub(p.last) >= interval || p.episodes == p.total {
		p.last = now
		p.draw(now)
	}
}

func (p *progress) draw(now time.Time) {
	secs := max(now.Sub(p.start).Seconds(), 1e-9)
	turnRate, tokenRate := float64(p.turns)/secs, float64(p.tokens)/secs
	if p.out == nil {
		p.log.Info("rollout: progress", "episodes", p.episodes, "of", p.total, "turns_per_s", int(turnRate), "tokens_per_s", int(tokenRate))
		return
	}
	const width = 30
	filled := 0
	if p.total > 0 {
		filled = width * p.episodes / p.total
	}
	fmt.Fprintf(p.out, "\rrollout [%s%s] %d/%d episodes  %.0f turns/s  %.0f tokens/s ",
		strings.Repeat("#", filled), strings.Repeat(" ", width-filled), p.episodes, p.total, turnRate, tokenRate)
}

// finish ends the bar's line.
func (p *progress) finish() {
	if p.out != nil {
		p.mu.Lock()
		fmt.Fprintln(p.out)
		p.mu.Unlock()
	}
}
