package sandbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestFitFollowsStep: with FollowStep, Fit raises the worker limit to the programs a step loads, so that
// many programs are loaded at once (one per worker); a limit whose memory does not fit is refused with
// how many fit, and the limit stays; without FollowStep, Fit leaves Workers as set.
func TestFitFollowsStep(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers, o.FollowStep = 1, true })
	if got, err := p.Fit(5, 4); err != nil || got != 5 || p.Workers() != 5 {
		t.Fatalf("Fit(5, 4) = %d, %v (Workers %d), want 5 workers", got, err, p.Workers())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	loaded := make(chan *Program, 5)
	for range 5 {
		wg.Go(func() {
			prog, err := p.Load(ctx, counterEnv)
			if err != nil {
				t.Errorf("load: %v", err)
				return
			}
			loaded <- prog
		})
	}
	wg.Wait() // every program holds its worker until closed: five loaded at once need five workers
	close(loaded)
	n := 0
	for prog := range loaded {
		n++
		defer prog.Close()
	}
	if n != 5 {
		t.Fatalf("%d programs loaded at once, want 5", n)
	}
	if got, err := p.Fit(3, 4); err != nil || got != 5 {
		t.Fatalf("Fit(3, 4) = %d, %v; want the limit kept at 5 (Fit never lowers it)", got, err)
	}

	huge := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers, o.FollowStep, o.InstanceMemory = 2, true, 1<<50 })
	got, err := huge.Fit(10, 4)
	var me *MemoryError
	if !errors.Is(err, ErrWorkersMemory) || !errors.As(err, &me) || got != 2 || huge.Workers() != 2 {
		t.Fatalf("Fit of 10 workers of 4 PiB each = %d, %v; want a MemoryError and the limit kept at 2", got, err)
	}
	if me.Want != 10 || me.Fits != 2 {
		t.Errorf("MemoryError = %+v, want Want 10, Fits 2", me)
	}

	fixed := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 2 })
	if got, err := fixed.Fit(10, 4); err != nil || got != 2 {
		t.Fatalf("Fit without FollowStep = %d, %v; want 2, nil", got, err)
	}
}
