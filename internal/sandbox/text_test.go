package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckTextRefusesNulAndInvalidUTF8 checks the Go side's text rule on hand-made replies: a NUL in
// the observation or as an info's \u0000 escape, and invalid UTF-8 in either, are refused as
// InvalidText env errors; an escaped backslash followed by "u0000" is ordinary text.
func TestCheckTextRefusesNulAndInvalidUTF8(t *testing.T) {
	cases := []struct {
		name    string
		r       reply
		refused bool
	}{
		{"plain", reply{Obs: "look", Info: json.RawMessage(`{"a":"b"}`)}, false},
		{"nul in observation", reply{Obs: "a\x00b"}, true},
		{"invalid utf-8 observation", reply{Obs: "a\xffb"}, true},
		{"nul escape in info", reply{Obs: "a", Info: json.RawMessage(`{"a":"x\u0000y"}`)}, true},
		{"nul escape at the start", reply{Obs: "a", Info: json.RawMessage(`\u0000`)}, true},
		{"escaped backslash then u0000", reply{Obs: "a", Info: json.RawMessage(`{"a":"x\\u0000y"}`)}, false},
		{"three backslashes then u0000", reply{Obs: "a", Info: json.RawMessage(`{"a":"x\\\u0000y"}`)}, true},
		{"invalid utf-8 info", reply{Obs: "a", Info: json.RawMessage("{\"a\":\"\xff\"}")}, true},
	}
	for _, c := range cases {
		err := checkText("step", c.r)
		if got := IsInvalidText(err); got != c.refused {
			t.Errorf("%s: refused %v (%v), want %v", c.name, got, err, c.refused)
		}
	}
}

// TestNulObservationsAreEnvFaults runs programs returning a NUL in the observation of reset or step
// and in a step's info (reset's info is not kept), hardened and with the harness's checks off (the Go side's check then holds alone),
// and asserts each call fails with an InvalidText env error that names the text.
func TestNulObservationsAreEnvFaults(t *testing.T) {
	programs := map[string]string{
		"reset observation": "class E:\n    def reset(self, seed=None):\n        return 'a\\x00b', {}\n    def step(self, a):\n        return 'x', 0.0, True, False, {}\n",
		"step observation":  "class E:\n    def reset(self, seed=None):\n        return 'ab', {}\n    def step(self, a):\n        return 'x\\x00', 0.0, True, False, {}\n",
		"step info":         "class E:\n    def reset(self, seed=None):\n        return 'ab', {}\n    def step(self, a):\n        return 'x', 0.0, True, False, {'k': ['\\x00']}\n",
	}
	for _, hardened := range []bool{true, false} {
		var p *Pool
		if hardened {
			p = newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
		} else {
			p = newTestPool(t, IsolationNone, func(o *Options) { o.Workers = 1; o.unhardened = true })
		}
		for name, code := range programs {
			ctx := context.Background()
			prog, err := p.Load(ctx, code)
			if err != nil {
				t.Fatalf("%s: load: %v", name, err)
			}
			env, err := prog.NewEnv(ctx)
			if err != nil {
				t.Fatalf("%s: new: %v", name, err)
			}
			_, err = env.Reset(ctx, 1)
			if strings.HasPrefix(name, "step") {
				if err != nil {
					t.Fatalf("%s: reset: %v", name, err)
				}
				_, err = env.Step(ctx, "go")
			}
			if !IsInvalidText(err) || !strings.Contains(err.Error(), strings.Fields(name)[1]) {
				t.Errorf("hardened %v, %s: %v, want an InvalidText env error naming the %s", hardened, name, err, strings.Fields(name)[1])
			}
			env.Close()
			prog.Close()
		}
	}
}
