package gate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
)

// TestGateCannotBeRecognised: the testdata/hostile/gate_* programs recognise a gate (small seeds,
// instant probes, one shared instance) or hide a fault from it (non-determinism after a few
// steps), and misbehave in rollout. A gate without hashed seeds, fresh instances per check, spaced
// trivial and hint_leak probes and replayed steps accepts all four (commit 1584334: static check
// on, 10 runs out of 10 each, on 2 loaded cores; testdata/hostile/README.md). Each is rejected by
// the check named here, and the attack still works in rollout's conditions (a fresh instance per
// episode, a large seed, an Agent that takes its time), so the rejection is the gate's doing.
func TestGateCannotBeRecognised(t *testing.T) {
	wantCheck := map[string]string{
		"gate_small_seeds":         CheckTrivial,
		"gate_instant_probes":      CheckTrivial,
		"gate_hint_once":           CheckHintLeak,
		"gate_late_nondeterminism": CheckReset,
		"gate_fixed_probes":        CheckTrivial,
	}
	pool := newPool(t, sandbox.IsolationBwrap)
	ctx := context.Background()
	seen := 0
	for _, h := range readSamples(t, repoPath("testdata", "hostile")) {
		if !strings.HasPrefix(h.Name, "gate_") {
			continue
		}
		seen++
		t.Run(h.Name, func(t *testing.T) {
			want, ok := wantCheck[h.Name]
			if !ok {
				t.Fatalf("no expected check for %s", h.Name)
			}
			for run := 0; run < 3; run++ {
				v := Check(ctx, pool, h.Code, CheckOptions{Setting: h.Setting, Hint: h.Hint, EnvID: h.Name, RunSeed: int64(run)})
				f := v.Failure()
				if v.Err != nil || v.Accepted || f == nil {
					t.Fatalf("run %d: accepted (%v); want %s to fail (attack: %s)", run, v.Err, want, h.Attack)
				}
				// A program that decides by timing plays fair only when its steps come late; on a loaded
				// machine the determinism replay may already catch it differing between two instances.
				if h.Name == "gate_instant_probes" && f.Check == CheckReset && strings.Contains(f.Error, "not deterministic") {
					continue
				}
				// It reaches a clock through dataclasses.inspect.importlib, which the static check's second
				// round refuses; the test below still shows the timing attack works in rollout.
				if h.Name == "gate_instant_probes" && f.Check == CheckStatic && strings.Contains(f.Error, "is the module") {
					continue
				}
				if f.Check != want || !strings.Contains(f.Error, h.Expect[0]) {
					t.Fatalf("run %d: %s failed: %s; want %s failing with %q", run, f.Check, clip(f.Error), want, h.Expect[0])
				}
			}
			assertAttackWorksInRollout(t, pool, h)
		})
	}
	if seen != len(wantCheck) {
		t.Fatalf("%d gate_* programs in testdata/hostile, want %d", seen, len(wantCheck))
	}
}

// assertAttackWorksInRollout plays h as rollout would: every episode a fresh instance with a
// large seed, and the Agent's first action 50 ms after the observation.
func assertAttackWorksInRollout(t *testing.T, pool *sandbox.Pool, h sample) {
	t.Helper()
	ctx := context.Background()
	prog, err := pool.Load(ctx, h.Code)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	play := func(seed int64, actions ...string) []sandbox.StepResult {
		env, err := prog.NewEnv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		if _, err := env.Reset(ctx, seed); err != nil {
			t.Fatal(err)
		}
		var out []sandbox.StepResult
		for _, a := range actions {
			time.Sleep(50 * time.Millisecond)
			res, err := env.Step(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res)
		}
		return out
	}
	solvedAtOnce := func(seed int64, action string) bool {
		r := play(seed, action)[0]
		return r.Done && r.Success()
	}
	const seed = 1_234_567_891
	switch h.Name {
	case "gate_fixed_probes":
		if !solvedAtOnce(seed, "look") || !solvedAtOnce(seed+1, `\boxed{42}`) {
			t.Errorf("%s: an Agent's first action does not solve an episode: the attack does not work", h.Name)
		}
	case "gate_small_seeds", "gate_instant_probes":
		if !solvedAtOnce(seed, "") || !solvedAtOnce(seed+1, "anything") {
			t.Errorf("%s: an empty or arbitrary first action does not solve an episode: the attack does not work", h.Name)
		}
	case "gate_hint_once":
		if !solvedAtOnce(seed, h.Hint) || !solvedAtOnce(seed+1, h.Hint) {
			t.Errorf("%s: the hint does not solve every fresh episode: the attack does not work", h.Name)
		}
	case "gate_late_nondeterminism":
		actions := []string{"1", "2", "3", "4", "5", "6"}
		a, b := play(seed, actions...), play(seed, actions...)
		for i := range 3 {
			if a[i].Observation != b[i].Observation || a[i].Reward != b[i].Reward {
				t.Errorf("%s: step %d differs already: %+v vs %+v", h.Name, i+1, a[i], b[i])
			}
		}
		if a[3].Observation == b[3].Observation && a[4].Observation == b[4].Observation && a[5].Observation == b[5].Observation {
			t.Errorf("%s: steps 4-6 agree between two plays of one seed: the attack does not work", h.Name)
		}
	}
}

// TestFixedProbesAreRecognisable shows why the trivial check draws its probes: with gate.probes fixed
// (the public list alone) gate_fixed_probes.py, which fails exactly those, is accepted, whatever the run
// seed; drawn, it is refused as trivial (TestGateCannotBeRecognised) with the drawn actions named, the
// same ones on a re-run and others for another candidate, and a sample env still passes.
func TestFixedProbesAreRecognisable(t *testing.T) {
	var h sample
	for _, s := range readSamples(t, repoPath("testdata", "hostile")) {
		if s.Name == "gate_fixed_probes" {
			h = s
		}
	}
	pool := newPool(t, sandbox.IsolationBwrap)
	ctx := context.Background()
	for run := int64(0); run < 3; run++ {
		if v := Check(ctx, pool, h.Code, CheckOptions{Setting: h.Setting, Hint: h.Hint, EnvID: h.Name, RunSeed: run, Probes: config.ProbesFixed}); !v.Accepted {
			t.Fatalf("run %d with fixed probes: refused (%s), so drawing them proves nothing", run, v.FailureText())
		}
	}
	a, b := DrawProbes(GateSeed(1, 2, "env-a", "probes", 0), 8), DrawProbes(GateSeed(1, 2, "env-a", "probes", 0), 8)
	c := DrawProbes(GateSeed(1, 2, "env-b", "probes", 0), 8)
	if strings.Join(a, "\n") != strings.Join(b, "\n") || strings.Join(a, "\n") == strings.Join(c, "\n") || len(a) != 8 {
		t.Fatalf("drawn probes: %q, again %q, another env %q", a, b, c)
	}
	drawn := DrawProbes(GateSeed(7, 0, h.Name, "probes", 0), 8)
	v := Check(ctx, pool, h.Code, CheckOptions{Setting: h.Setting, Hint: h.Hint, EnvID: h.Name, RunSeed: 7})
	f := v.Failure()
	if v.Accepted || f == nil || f.Check != CheckTrivial || !strings.Contains(f.Error, "every one of 8 Agent-like probe actions drawn") ||
		!strings.Contains(f.Error, fmt.Sprintf("%q", drawn[0])) {
		t.Fatalf("drawn probes: %s, want trivial listing the drawn %q", v.FailureText(), drawn)
	}
	good := readSamples(t, repoPath("testdata", "envs"))[0]
	if v := Check(ctx, pool, good.Code, CheckOptions{Setting: good.Setting, Hint: good.Hint, EnvID: "env-a", RunSeed: 1, Step: 2}); !v.Accepted {
		t.Fatalf("a sample env with drawn probes: %s", v.FailureText())
	}
}
