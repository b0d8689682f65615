package progress

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the bar's and the test's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBarOnATerminal: on a terminal the task is a redrawn bar with the count, the rate and the time
// left; lines written through Writer appear whole, and Done clears the bar.
func TestBarOnATerminal(t *testing.T) {
	var term syncBuffer
	r := New(&term, nil, 0)
	if !r.Terminal() {
		t.Fatal("a reporter with a terminal writer says it is not on a terminal")
	}
	task := r.Start("rollout", 10, "episodes")
	for i := 0; i < 10; i++ {
		task.Note("%d turns/s", 100+i)
		task.Add(1)
		time.Sleep(15 * time.Millisecond)
		if i == 4 {
			r.Printf("a line above the bar")
		}
	}
	task.Done()
	out := term.String()
	for _, re := range []string{`\r`, `\d+/10`, `episodes/s`, `\[\d+s:\d+s\]`, `rollout  1\d\d turns/s`, "\x1b\\[K" + `a line above the bar\n`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("terminal output lacks %q:\n%q", re, out)
		}
	}
}

// TestLogLinesOffATerminal: off a terminal a task logs its count, total, rate and time left at most
// every interval, and nothing is drawn.
func TestLogLinesOffATerminal(t *testing.T) {
	var logs syncBuffer
	r := New(nil, slog.New(slog.NewTextHandler(&logs, nil)), 20*time.Millisecond)
	task := r.Start("synth", 6, "steps")
	for i := 0; i < 6; i++ {
		time.Sleep(12 * time.Millisecond)
		task.Add(1)
	}
	task.Done()
	r.Printf("closing line")
	out := logs.String()
	lines := strings.Count(out, "synth: progress")
	if lines < 1 || lines > 4 {
		t.Errorf("want between 1 and 4 progress lines at a 20ms interval over ~70ms, got %d:\n%s", lines, out)
	}
	for _, want := range []string{"unit=steps", "of=6", "rate_per_s=", "eta=", `msg="closing line"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\r") {
		t.Errorf("a bar was drawn off a terminal:\n%q", out)
	}
	// A nil reporter and its nil task do nothing.
	var none *Reporter
	none.Start("x", 1, "y").Add(1)
	none.Printf("nothing")
}

// TestTermHandler: warnings are one line, and a value with line breaks (a traceback) is printed as it is
// below the line, not escaped into it.
func TestTermHandler(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(NewTermHandler(&b, slog.LevelWarn))
	log.Info("not shown")
	tb := "Traceback (most recent call last):\n  File \"env.py\", line 3, in step\nZeroDivisionError: division by zero"
	log.Warn("gate: candidate failed", "step", 4, "error", errors.New(tb))
	want := "warning: gate: candidate failed step=4\n  error:\n    Traceback (most recent call last):\n" +
		"      File \"env.py\", line 3, in step\n    ZeroDivisionError: division by zero\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestRefreshUntilDone: Refresh calls its note on every tick while the task runs and never after Done;
// on a nil Task (no reporter) it does nothing.
func TestRefreshUntilDone(t *testing.T) {
	r := New(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour)
	task := r.Start("x", 10, "units")
	var calls atomic.Int64
	task.Refresh(5*time.Millisecond, func() { calls.Add(1) })
	time.Sleep(60 * time.Millisecond)
	task.Done()
	seen := calls.Load()
	if seen < 3 {
		t.Fatalf("%d notes in 60 ms at a 5 ms interval", seen)
	}
	time.Sleep(30 * time.Millisecond)
	if after := calls.Load(); after > seen+1 { // (one tick may be in flight at Done)
		t.Fatalf("notes went on after Done: %d, then %d", seen, after)
	}
	var none *Task
	none.Refresh(time.Millisecond, func() { t.Error("a nil Task refreshed") })
	time.Sleep(10 * time.Millisecond)
}
