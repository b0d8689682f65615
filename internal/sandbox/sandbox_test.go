package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const counterEnv = `
import random

class Counter:
    def __init__(self):
        self.n = 0
    def reset(self, seed):
        self.rng = random.Random(seed)
        self.target = self.rng.randint(1, 100)
        self.n = 0
        return "guess a number in 1..100 (%d)" % self.rng.randint(0, 10**9)
    def step(self, action):
        self.n += 1
        print("step", self.n, action)
        try:
            g = int(action)
        except ValueError:
            return "not a number", 0.0, False, {}
        if g == self.target:
            return "yes", 1.0, True, {"success": True}
        return ("higher" if g < self.target else "lower"), 0.0, self.n >= 25, {}
`

// misbehaving returns a program whose step runs body (indented under step).
func misbehaving(body string) string {
	return "import math\nclass Bad:\n    def reset(self, seed):\n        return 'start'\n    def step(self, action):\n" +
		indent(body, "        ") + "\n        return 'ok', 0.0, False, {}\n"
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

// play binary-searches the counter env and returns the number of steps to success.
func play(t *testing.T, p *Pool) int {
	t.Helper()
	ctx := context.Background()
	prog, err := p.Load(ctx, counterEnv)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer prog.Close()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	defer env.Close()
	if _, err := env.Reset(ctx, 7); err != nil {
		t.Fatalf("reset: %v", err)
	}
	lo, hi := 1, 100
	for i := 1; i <= 10; i++ {
		g := (lo + hi) / 2
		r, err := env.Step(ctx, fmt.Sprint(g))
		if err != nil {
			t.Fatalf("step: %v", err)
		}
		if i == 1 {
			out, err := prog.Output(ctx)
			if err != nil || !strings.Contains(out, fmt.Sprintf("step %d %d", i, g)) {
				t.Fatalf("captured output %q (%v) lacks the print", out, err)
			}
		}
		switch {
		case r.Done && r.Success() && r.Reward == 1:
			return i
		case r.Observation == "higher":
			lo = g + 1
		case r.Observation == "lower":
			hi = g - 1
		default:
			t.Fatalf("unexpected step result %+v", r)
		}
	}
	t.Fatal("binary search did not finish in 10 steps")
	return 0
}

func TestPlayEachIsolation(t *testing.T) {
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			p := newTestPool(t, iso, nil)
			if p.Isolation() != iso {
				t.Fatalf("isolation %s, want %s", p.Isolation(), iso)
			}
			play(t, p)
		})
	}
}

func TestDeterministicReset(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), nil)
	ctx := context.Background()
	prog, err := p.Load(ctx, counterEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	first := map[int64]string{}
	for round := 0; round < 2; round++ {
		env, err := prog.NewEnv(ctx) // a fresh forked child each round
		if err != nil {
			t.Fatal(err)
		}
		for _, seed := range []int64{0, 1, 99} {
			obs, err := env.Reset(ctx, seed)
			if err != nil {
				t.Fatal(err)
			}
			if round == 0 {
				first[seed] = obs
			} else if first[seed] != obs {
				t.Fatalf("seed %d: %q then %q", seed, first[seed], obs)
			}
		}
		env.Close()
	}
	if first[0] == first[1] {
		t.Fatalf("seeds 0 and 1 gave the same observation %q", first[0])
	}
}

func TestTypedErrors(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), func(o *Options) {
		o.StepTimeout = 1500 * time.Millisecond
		o.AddressSpace = 256 << 20
		o.OutputCap = 64 << 10
	})
	cases := []struct {
		name string
		body string
		want *Error
	}{
		{"exception", "raise ValueError('boom')", ErrEnv},
		{"bad return", "return 1", ErrEnv},
		{"nan reward", "return 'x', float('nan'), False, {}", ErrEnv},
		{"timeout", "while True: pass", ErrTimeout},
		{"memory", "x = bytearray(512 << 20)", ErrMemory},
		{"crash", "import os\nos._exit(3)", ErrCrash},
		{"segfault", "import ctypes\nctypes.string_at(0)", ErrCrash},
		{"huge observation", "return 'x' * (100 << 20), 0.0, False, {}", ErrOutput},
		{"stdout flood", "for i in range(100000): print('flood' * 20)", ErrOutput},
		{"unexpected message", "import socket\ns = socket.socket(fileno=3)\ns.sendall(b'{\"id\": 1, \"ok\": true}\\n')", ErrProtocol},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prog, err := p.Load(ctx, misbehaving(c.body))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			defer prog.Close()
			env, err := prog.NewEnv(ctx)
			if err != nil {
				t.Fatalf("new: %v", err)
			}
			defer env.Close()
			if _, err := env.Reset(ctx, 1); err != nil {
				t.Fatalf("reset: %v", err)
			}
			start := time.Now()
			_, err = env.Step(ctx, "go")
			var se *Error
			if !errors.As(err, &se) || !errors.Is(err, c.want) {
				t.Fatalf("step error %v, want kind %s", err, c.want.Kind)
			}
			if se.Op != "step" {
				t.Fatalf("op %q, want step", se.Op)
			}
			// the wall deadline ended it, not the CPU limit (5 CPU seconds, which a loaded machine
			// stretches far beyond this bound), with room for the kill on a loaded machine
			if c.want == ErrTimeout && time.Since(start) > p.Options().StepTimeout+6*time.Second {
				t.Fatalf("timeout took %s", time.Since(start))
			}
			if c.want != ErrEnv {
				// the env is gone after a non-env failure
				if _, err := env.Step(ctx, "again"); err == nil {
					t.Fatal("env still answers after a fatal error")
				}
			}
		})
	}
	play(t, p) // the same pool still serves
}

func TestLoadErrors(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.LoadTimeout = 1500 * time.Millisecond })
	ctx := context.Background()
	for name, code := range map[string]string{
		"syntax":       "class A(:\n",
		"no class":     "x = 1\n",
		"module raise": "raise RuntimeError('at import')\n" + counterEnv,
	} {
		_, err := p.Load(ctx, code)
		if !errors.Is(err, ErrEnv) {
			t.Errorf("%s: %v, want env error", name, err)
		}
	}
	_, err := p.Load(ctx, "while True: pass\n"+counterEnv)
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("loop at import: %v, want timeout", err)
	}
	prog, err := p.Load(ctx, strings.Replace(counterEnv, "self.n = 0\n    def reset", "self.n = 0\n        while True: pass\n    def reset", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if _, err := prog.NewEnv(ctx); !errors.Is(err, ErrTimeout) {
		t.Errorf("loop in __init__: %v, want timeout", err)
	}
	play(t, p)
}

func TestRefusesWithoutIsolation(t *testing.T) {
	_, err := NewPool(context.Background(), Options{Python: testPython(t), Isolation: IsolationNone})
	if !errors.Is(err, ErrNoIsolation) {
		t.Fatalf("got %v, want ErrNoIsolation", err)
	}
	p := newTestPool(t, IsolationNone, nil) // with AllowUnsafe it runs, unconfined
	play(t, p)
}

// ledgerEnv keeps state at three levels: on the instance (seed, seen), on the class (instances, counted
// in __init__) and in the module (LOG, appended to by every reset and step). Each observation reports all
// three, so a test sees whether anything one instance did reached another.
const ledgerEnv = `
import json

LOG = []

class Ledger:
    instances = 0
    def __init__(self):
        Ledger.instances += 1
    def _obs(self):
        return json.dumps({"seed": self.seed, "seen": self.seen, "log": LOG, "instances": Ledger.instances})
    def reset(self, seed):
        self.seed, self.seen = seed, []
        LOG.append("reset %d" % seed)
        return self._obs()
    def step(self, action):
        self.seen.append(action)
        LOG.append(action)
        return self._obs(), float(len(self.seen)), False, {}
`

// ledgerObs is one observation of ledgerEnv.
type ledgerObs struct {
	Seed      int64    `json:"seed"`
	Seen      []string `json:"seen"`
	Log       []string `json:"log"`
	Instances int      `json:"instances"`
}

// TestConcurrentEnvsOneProgram: instances of one program are independent. Eight instances of a program
// with instance, class and module state step concurrently, round by round (so their steps interleave),
// and one is reset halfway; every observation must follow that instance's own resets and actions only:
// its own seed and actions, a module log holding only its own history, and one instance of the class.
func TestConcurrentEnvsOneProgram(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), nil)
	ctx := context.Background()
	prog, err := p.Load(ctx, ledgerEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	const instances, rounds, resetAt = 8, 6, 3
	type instance struct {
		env  *Env
		seed int64
		seen []string // the actions since the last reset
		log  []string // what the instance's module log must hold
	}
	all := make([]*instance, instances)
	// check decodes an observation and compares it with what the instance alone did.
	check := func(in *instance, i int, what, raw string) error {
		var o ledgerObs
		if err := json.Unmarshal([]byte(raw), &o); err != nil {
			return fmt.Errorf("instance %d %s: observation %q: %v", i, what, raw, err)
		}
		if o.Seed != in.seed || !slices.Equal(o.Seen, in.seen) || !slices.Equal(o.Log, in.log) || o.Instances != 1 {
			return fmt.Errorf("instance %d %s: saw seed %d, actions %q, module log %q, %d instances of the class; "+
				"its own history is seed %d, actions %q, log %q, 1 instance", i, what, o.Seed, o.Seen, o.Log, o.Instances, in.seed, in.seen, in.log)
		}
		return nil
	}
	reset := func(in *instance, i int, seed int64) error {
		in.seed, in.seen = seed, nil
		in.log = append(in.log, fmt.Sprintf("reset %d", seed))
		obs, err := in.env.Reset(ctx, seed)
		if err != nil {
			return fmt.Errorf("instance %d reset(%d): %w", i, seed, err)
		}
		return check(in, i, fmt.Sprintf("reset(%d)", seed), obs)
	}
	// each runs f for every instance at once and waits for all of them.
	each := func(f func(in *instance, i int) error) {
		t.Helper()
		errs := make([]error, instances)
		var wg sync.WaitGroup
		for i := range all {
			wg.Go(func() { errs[i] = f(all[i], i) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	each(func(_ *instance, i int) error {
		env, err := prog.NewEnv(ctx)
		if err != nil {
			return err
		}
		t.Cleanup(func() { env.Close() })
		all[i] = &instance{env: env}
		return reset(all[i], i, int64(100+i))
	})
	for round := range rounds {
		if round == resetAt {
			// One instance starts a new episode; the others must not notice.
			if err := reset(all[0], 0, 7); err != nil {
				t.Fatal(err)
			}
		}
		each(func(in *instance, i int) error {
			action := fmt.Sprintf("i%d-r%d", i, round)
			in.seen = append(in.seen, action)
			in.log = append(in.log, action)
			r, err := in.env.Step(ctx, action)
			if err != nil {
				return fmt.Errorf("instance %d step %q: %w", i, action, err)
			}
			if r.Reward != float64(len(in.seen)) {
				return fmt.Errorf("instance %d step %q: reward %v, want %d (its own step count)", i, action, r.Reward, len(in.seen))
			}
			return check(in, i, fmt.Sprintf("step %q", action), r.Observation)
		})
	}
}

func TestCPULimitIsATimeout(t *testing.T) {
	// (the wall deadline is far beyond what one CPU second takes on a loaded machine: the CPU limit ends it)
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.CPUSeconds = 1; o.StepTimeout = 3 * time.Minute })
	ctx := context.Background()
	prog, err := p.Load(ctx, misbehaving("while True: pass"))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Reset(ctx, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = env.Step(ctx, "spin")
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "CPU") {
		t.Fatalf("got %v, want a CPU timeout", err)
	}
	if time.Since(start) > 2*time.Minute {
		t.Fatalf("the CPU limit took %s", time.Since(start))
	}
}

// sandboxProcesses lists host pids whose command line contains marker.
func sandboxProcesses(t *testing.T, marker string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		if data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(data), marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestSetsidDaemonDies: a daemon in its own session escapes a process-group kill; closing the
// program recycles its tainted worker, whose PID namespace takes the daemon down with it (if the
// layer's sweep of detached processes has not already).
func TestSetsidDaemonDies(t *testing.T) {
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			p := newTestPool(t, iso, func(o *Options) { o.StepTimeout = 3 * time.Second })
			marker := fmt.Sprintf("spade-daemon-%d", time.Now().UnixNano())
			// (the step waits for the daemon's exec, which closes the pipe's close-on-exec end: the
			// daemon runs before the step's deadline, however slow the machine)
			body := fmt.Sprintf("import os, time\nr, w = os.pipe()\nif os.fork() == 0:\n    os.setsid()\n    os.execv('/bin/sh', ['sh', '-c', 'sleep 600 # %s'])\nos.close(w)\nos.read(r, 1)\nwhile True: time.sleep(1)", marker)
			ctx := context.Background()
			prog, err := p.Load(ctx, misbehaving(body))
			if err != nil {
				t.Fatal(err)
			}
			env, err := prog.NewEnv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := env.Reset(ctx, 0); err != nil {
				t.Fatal(err)
			}
			stepped := make(chan error, 1)
			go func() {
				_, err := env.Step(ctx, "go")
				stepped <- err
			}()
			// seen while its instance still runs: once the instance is killed the daemon is an orphan of
			// the layer's init, which kills it within half a second (kill_detached, killDetached)
			seen, err := false, error(nil)
		watch:
			for !seen {
				select {
				case err = <-stepped:
					break watch
				case <-time.After(10 * time.Millisecond):
					seen = len(sandboxProcesses(t, marker)) > 0
				}
			}
			if seen {
				err = <-stepped
			}
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("step: %v, want timeout", err)
			}
			if !seen {
				t.Fatal("the daemon did not start (the test would prove nothing)")
			}
			if !prog.Tainted() {
				t.Fatal("worker not tainted after a timeout")
			}
			prog.Close()
			deadline := time.Now().Add(settle)
			for len(sandboxProcesses(t, marker)) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("daemon still alive after the worker was recycled: %v", sandboxProcesses(t, marker))
				}
				time.Sleep(20 * time.Millisecond)
			}
			play(t, p)
		})
	}
}

// TestMoreLoadsThanWorkers loads more programs at once than the pool has workers: every Load must
// complete once earlier programs close (a released worker wakes a waiting Load), and the pool must never
// hold more live workers than its limit.
func TestMoreLoadsThanWorkers(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const loads = 7
	errs := make(chan error, loads)
	for i := 0; i < loads; i++ {
		go func() {
			prog, err := p.Load(ctx, counterEnv)
			if err != nil {
				errs <- err
				return
			}
			defer prog.Close()
			p.mu.Lock()
			live := p.live
			p.mu.Unlock()
			if live > 2 {
				errs <- fmt.Errorf("%d live workers, limit 2", live)
				return
			}
			env, err := prog.NewEnv(ctx)
			if err == nil {
				_, err = env.Reset(ctx, 1)
				env.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < loads; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
}

// An env instance reports the CPU time of its own process: a step that burns CPU reports more than
// the time it burned, a trivial env a small value, and the value never decreases.
func TestEnvReportsItsCPUSeconds(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), nil)
	ctx := context.Background()
	burner := "import time\nclass Burn:\n    def reset(self, seed):\n        return 'start'\n" +
		"    def step(self, action):\n        end = time.process_time() + 0.3\n        x = 0\n" +
		"        while time.process_time() < end:\n            x += 1\n        return 'burnt', 0.0, True, {}\n"
	// children that burn the CPU and are still running, or exited and were never waited for, count too
	burnChild := func(wait string) string {
		return "import os, time\nclass Burn:\n    def reset(self, seed):\n        return 'start'\n" +
			"    def step(self, action):\n        r, w = os.pipe()\n        if os.fork() == 0:\n            end = time.process_time() + 0.4\n" +
			"            while time.process_time() < end:\n                pass\n            os.write(w, b'x')\n            " + wait + "\n            os._exit(0)\n" +
			"        os.read(r, 1)\n        time.sleep(0.05)\n        return 'burnt', 0.0, True, {}\n"
	}
	cases := []struct {
		name     string
		code     string
		min, max float64
	}{
		{"burner", burner, 0.3, 5},
		{"trivial", counterEnv, 0, 0.1},
		{"a child still running", burnChild("time.sleep(5)"), 0.35, 5},
		{"a child that exited, not waited for", burnChild("pass"), 0.35, 5},
	}
	for _, c := range cases {
		prog, err := p.Load(ctx, c.code)
		if err != nil {
			t.Fatalf("%s: load: %v", c.name, err)
		}
		env, err := prog.NewEnv(ctx)
		if err != nil {
			t.Fatalf("%s: new: %v", c.name, err)
		}
		if _, err := env.Reset(ctx, 1); err != nil {
			t.Fatalf("%s: reset: %v", c.name, err)
		}
		afterReset := env.CPUSeconds()
		if _, err := env.Step(ctx, "50"); err != nil {
			t.Fatalf("%s: step: %v", c.name, err)
		}
		got := env.CPUSeconds()
		if got < c.min || got > c.max || got < afterReset {
			t.Errorf("%s: CPUSeconds %.4f after a step (%.4f after reset), want in [%.2f, %.2f]", c.name, got, afterReset, c.min, c.max)
		}
		env.Close()
		prog.Close()
	}
}

// TestForkBombLeavesNoSpinningChildren runs a fork bomb in a one-worker pool: its step fails at the
// process limit, which must taint the worker (the bomb's children, left spinning at the limit, would make
// a later program's forks fail if the worker were reused), and the pool must go on serving programs.
func TestForkBombLeavesNoSpinningChildren(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	ctx := context.Background()
	bomb, err := p.Load(ctx, misbehaving("import os\nwhile True:\n    os.fork()"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := bomb.NewEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Reset(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Step(ctx, "go"); err == nil {
		t.Fatal("fork bomb step succeeded")
	}
	if !bomb.Tainted() {
		t.Fatal("worker not tainted after the fork bomb's step failed: its children may still be running")
	}
	env.Close()
	bomb.Close()
	for i := 0; i < 3; i++ {
		if n := play(t, p); n < 1 {
			t.Fatalf("play %d: %d steps", i, n)
		}
	}
}

// TestCallsStopOnCancel: a call in flight ends as soon as its context is cancelled (a SIGTERM to
// spade eval or rollout does not wait for a slow step), with an error that says so; the instance,
// left in the middle of the call, is closed, and the pool goes on serving.
func TestCallsStopOnCancel(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.StepTimeout = 2 * time.Minute })
	prog, err := p.Load(context.Background(), misbehaving("import time\ntime.sleep(100)"))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	env, err := prog.NewEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Reset(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err = env.Step(ctx, "go")
	// (at once: the program sleeps 100 s; the bound leaves a loaded machine room for the kill)
	if took := time.Since(start); !errors.Is(err, context.Canceled) || took > 10*time.Second {
		t.Fatalf("step after cancel: %v after %v, want context.Canceled at once", err, took)
	}
	if _, err := env.Step(context.Background(), "again"); err == nil {
		t.Fatal("the cancelled env served another call")
	}
	if _, err := env.Reset(ctx, 0); !errors.Is(err, context.Canceled) && !errors.Is(err, ErrClosed) {
		t.Fatalf("a call on a cancelled context: %v", err)
	}
	play(t, p)
}
