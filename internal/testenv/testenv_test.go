package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestCIReading: CI counts as set for any value but "", "0" and "false" (in any case).
func TestCIReading(t *testing.T) {
	for value, want := range map[string]bool{"": false, "0": false, "false": false, "FALSE": false, " false ": false,
		"true": true, "1": true, "yes": true, "True": true} {
		t.Setenv("CI", value)
		if got := CI(); got != want {
			t.Errorf("CI=%q: CI() = %v, want %v", value, got, want)
		}
	}
}

// recorder is a testing.TB that records how a helper stopped the test; like the real one it stops the
// goroutine on Fatalf and Skipf.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// stopped runs f with a recorder on its own goroutine, as the testing package runs a test.
func stopped(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// TestSkipUnlessCIFailsOnlyUnderCI: a missing part skips the test locally and fails it under CI, with the
// message naming the part; Require with a true condition does neither.
func TestSkipUnlessCIFailsOnlyUnderCI(t *testing.T) {
	for _, c := range []struct {
		ci                 string
		wantFail, wantSkip bool
	}{{"", false, true}, {"false", false, true}, {"true", true, false}, {"1", true, false}} {
		t.Setenv("CI", c.ci)
		for name, f := range map[string]func(testing.TB){
			"SkipUnlessCI":   func(tb testing.TB) { SkipUnlessCI(tb, "no %s", "tool") },
			"Require(false)": func(tb testing.TB) { Require(tb, false, "no %s", "tool") },
		} {
			r := stopped(t, f)
			if r.failed != c.wantFail || r.skipped != c.wantSkip || !strings.Contains(r.msg, "no tool") {
				t.Errorf("CI=%q: %s: failed %v skipped %v (%q), want failed %v skipped %v naming the part",
					c.ci, name, r.failed, r.skipped, r.msg, c.wantFail, c.wantSkip)
			}
		}
		if r := stopped(t, func(tb testing.TB) { Require(tb, true, "present") }); r.failed || r.skipped {
			t.Errorf("CI=%q: Require(true) stopped the test: %q", c.ci, r.msg)
		}
	}
}
