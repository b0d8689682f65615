package eval

import (
	"time"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/progress"
)

// evalProgress counts a benchmark's scored samples on the Env's progress reporter (a bar on a terminal,
// log lines otherwise), with the model calls in flight and the server's median latency as its note, as
// rollout's and the gate's do. Without a reporter nothing is shown.
type evalProgress struct {
	task   *progress.Task
	client *llm.Client
}

// newEvalProgress starts the count of total samples of the benchmark (name is the line's label).
func newEvalProgress(r *progress.Reporter, name string, total int, client *llm.Client) *evalProgress {
	p := &evalProgress{task: r.Start(name, int64(total), "samples"), client: client}
	p.task.Refresh(time.Second, p.note)
	return p
}

// sampleDone counts one scored sample.
func (p *evalProgress) sampleDone() {
	p.note()
	p.task.Add(1)
}

// note writes the calls in flight.
func (p *evalProgress) note() {
	if p.task == nil {
		return
	}
	l := p.client.Load()
	p.task.Note("%d calls in flight  median %s", l.Calls, l.MedianLatency.Round(time.Millisecond))
}

// finish removes the bar.
func (p *evalProgress) finish() { p.task.Done() }
