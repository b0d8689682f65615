// Package progress is how long work reports how far it is: on a terminal a redrawn bar with the count,
// the rate and the time left (github.com/schollz/progressbar), off a terminal a log line at most every
// Interval. Stages get a Reporter as stage.Env.Progress; the CLI makes one per process (see New). A nil
// *Reporter and a nil *Task discard everything, so callers never check.
package progress

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// DefaultInterval is how often a task logs its progress off a terminal.
const DefaultInterval = 10 * time.Second

// Reporter draws progress on a terminal or logs it.
type Reporter struct {
	term     io.Writer // nil: off a terminal, log lines
	log      *slog.Logger
	interval time.Duration

	mu     sync.Mutex
	active *Task // the bar on screen, if any
}

// New returns a Reporter that draws on term (nil off a terminal) and otherwise logs to log at most every
// interval (DefaultInterval when 0; SPADE_PROGRESS_INTERVAL, a Go duration, overrides it).
func New(term io.Writer, log *slog.Logger, interval time.Duration) *Reporter {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if d, err := time.ParseDuration(os.Getenv("SPADE_PROGRESS_INTERVAL")); err == nil && d > 0 {
		interval = d
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reporter{term: term, log: log, interval: interval}
}

// Terminal reports whether r draws on a terminal.
func (r *Reporter) Terminal() bool { return r != nil && r.term != nil }

// Task is one counted piece of work.
type Task struct {
	r     *Reporter
	name  string
	unit  string
	total int64
	start time.Time
	bar   *progressbar.ProgressBar

	mu      sync.Mutex
	n       int64
	note    string
	lastLog time.Time
	done    bool
	// refreshing closes when the task is done, ending every Refresh.
	refreshing chan struct{}
}

// Start begins a task of total units (total <= 0: unknown, a spinner on a terminal), named name (e.g.
// "rollout") and counting unit (e.g. "episodes").
func (r *Reporter) Start(name string, total int64, unit string) *Task {
	if r == nil {
		return nil
	}
	t := &Task{r: r, name: name, unit: unit, total: total, start: time.Now()}
	t.lastLog = t.start
	if r.term != nil {
		max := total
		if max <= 0 {
			max = -1
		}
		t.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(lineWriter{r}),
			progressbar.OptionSetDescription(name),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString(unit),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionUseANSICodes(true),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionClearOnFinish(),
		)
		r.mu.Lock()
		r.active = t
		r.mu.Unlock()
	}
	return t
}

// Add counts n more units done.
func (t *Task) Add(n int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.n += n
	count, note := t.n, t.note
	now := time.Now()
	logDue := t.bar == nil && now.Sub(t.lastLog) >= t.r.interval
	if logDue {
		t.lastLog = now
	}
	t.mu.Unlock()
	if t.bar != nil {
		_ = t.bar.Add64(n)
		return
	}
	if logDue {
		t.logLine(count, note, now)
	}
}

// Note sets a short text shown beside the bar (and in the log lines), e.g. "820 turns/s".
func (t *Task) Note(format string, args ...any) {
	if t == nil {
		return
	}
	note := fmt.Sprintf(format, args...)
	t.mu.Lock()
	t.note = note
	t.mu.Unlock()
	if t.bar != nil {
		t.bar.Describe(t.name + "  " + note)
	}
}

// Refresh calls note every interval until the task is Done, so a note that says what is in flight stays
// current while no unit finishes (a slow server). Nothing on a nil Task.
func (t *Task) Refresh(every time.Duration, note func()) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	if t.refreshing == nil {
		t.refreshing = make(chan struct{})
	}
	stop := t.refreshing
	t.mu.Unlock()
	go func() {
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				note()
			}
		}
	}()
}

// logLine logs the task's count, rate and estimated time left.
func (t *Task) logLine(count int64, note string, now time.Time) {
	elapsed := now.Sub(t.start)
	rate := float64(count) / max(elapsed.Seconds(), 1e-9)
	args := []any{"done", count, "unit", t.unit, "rate_per_s", round(rate), "elapsed", elapsed.Round(time.Second).String()}
	if t.total > 0 {
		args = append(args, "of", t.total)
		if rate > 0 && count < t.total {
			args = append(args, "eta", (time.Duration(float64(t.total-count)/rate) * time.Second).Round(time.Second).String())
		}
	}
	if note != "" {
		args = append(args, "note", note)
	}
	t.r.log.Info(t.name+": progress", args...)
}

func round(x float64) float64 {
	if x >= 100 {
		return float64(int64(x + 0.5))
	}
	return float64(int64(x*10+0.5)) / 10
}

// Done ends the task: the bar is cleared from the terminal (the caller prints its own summary).
func (t *Task) Done() {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	t.done = true
	if t.refreshing != nil {
		close(t.refreshing)
	}
	t.mu.Unlock()
	if t.bar != nil {
		_ = t.bar.Finish()
		_ = t.bar.Exit()
		t.r.mu.Lock()
		if t.r.active == t {
			t.r.active = nil
		}
		t.r.mu.Unlock()
	}
}

// Printf writes one line: above the bar on a terminal, an info log line otherwise.
func (r *Reporter) Printf(format string, args ...any) {
	if r == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if r.term == nil {
		r.log.Info(msg)
		return
	}
	_, _ = r.Writer().Write([]byte(strings.TrimRight(msg, "\n") + "\n"))
}

// Writer returns a writer for whole lines (a log handler's, a summary's) that keeps them apart from the
// bar on a terminal: the bar's line is cleared first and redrawn after. Off a terminal it is os.Stderr.
func (r *Reporter) Writer() io.Writer {
	if r == nil || r.term == nil {
		return os.Stderr
	}
	return textWriter{r}
}

// textWriter writes lines above the bar.
type textWriter struct{ r *Reporter }

func (w textWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	active := w.r.active
	w.r.mu.Unlock()
	if active != nil {
		w.r.mu.Lock()
		_, _ = io.WriteString(w.r.term, "\r\x1b[K")
		n, err := w.r.term.Write(p)
		w.r.mu.Unlock()
		_ = active.bar.RenderBlank()
		return n, err
	}
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.term.Write(p)
}

// lineWriter is the bar's own output, serialised with textWriter.
type lineWriter struct{ r *Reporter }

func (w lineWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.term.Write(p)
}

// IsTerminal reports whether w is a terminal (a character device), for callers deciding what to pass New.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
