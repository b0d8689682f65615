package gate

import (
	"sync/atomic"
	"time"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/progress"
)

// gateProgress counts judged slots on the Env's progress reporter (a bar on a terminal, log lines
// otherwise), with what is in flight as its note: the candidates being checked, the slots whose
// Designer is regenerating, the hint calls, and the model calls in flight with the server's median
// latency. Many checks and few calls mean the sandbox is the bottleneck; many regenerations with a
// rising latency, the server. Without a reporter nothing is shown, and the counts cost a few atomics.
type gateProgress struct {
	task *progress.Task
	load func() llm.Load
	// checking, regenerating and hinting count the slots in each state now; accepted the slots done
	// with an env.
	checking, regenerating, hinting, accepted atomic.Int64
}

// newGateProgress starts the count of slots; load reads the calls in flight (stage.Env.LLMLoad).
func newGateProgress(r *progress.Reporter, slots int, load func() llm.Load) *gateProgress {
	p := &gateProgress{task: r.Start("gate", int64(slots), "slots"), load: load}
	p.task.Refresh(time.Second, p.note)
	return p
}

// slotDone counts one slot judged (accepted when it gave an env).
func (p *gateProgress) slotDone(accepted bool) {
	if accepted {
		p.accepted.Add(1)
	}
	p.note()
	p.task.Add(1)
}

// note writes what is in flight.
func (p *gateProgress) note() {
	if p.task == nil {
		return
	}
	l := p.load()
	p.task.Note("%d accepted  %d checking, %d regenerating, %d hinting, %d calls in flight  median %s", p.accepted.Load(),
		p.checking.Load(), p.regenerating.Load(), p.hinting.Load(), l.Calls, l.MedianLatency.Round(time.Millisecond))
}

// finish removes the bar.
func (p *gateProgress) finish() { p.task.Done() }
