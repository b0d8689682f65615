package sandbox

import (
	"context"
	"testing"
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
        print("reset called")
        return "guess a number in 1..100"
    def step(self, action):
        self.n += 1
        try:
            g = int(action)
        except ValueError:
            return "not a number", 0.0, False, {}
        if g == self.target:
            return "yes", 1.0, True, {"success": True}
        return ("higher" if g < self.target else "lower"), 0.0, self.n >= 25, {}
`

func TestSmoke(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), nil)
	ctx := context.Background()
	prog, err := p.Load(ctx, counterEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := env.Reset(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(obs)
	lo, hi := 1, 100
	for i := 0; i < 10; i++ {
		g := (lo + hi) / 2
		r, err := env.Step(ctx, itoa(g))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d -> %+v", g, r)
		if r.Done {
			if !r.Success() {
				t.Fatal("no success")
			}
			return
		}
		if r.Observation == "higher" {
			lo = g + 1
		} else {
			hi = g - 1
		}
	}
	t.Fatal("never solved")
}

func itoa(i int) string { return fmtInt(i) }

func fmtInt(i int) string {
	return string([]byte(func() string { s := ""; if i == 0 { return "0" }; for i > 0 { s = string(rune('0'+i%10)) + s; i /= 10 }; return s }()))
}
