package sandbox

import (
	"context"
	"strings"
	"testing"
)

// operatorProgram uses operator injected and imported: public names work through attrgetter and
// methodcaller, and every private or dunder name built at run time is refused with a ValueError.
const operatorProgram = `from operator import attrgetter, methodcaller
UNDER = "_" * 2


class OpEnv:
    def reset(self, seed=None):
        out = [str(attrgetter("real")(3 + 4j)), methodcaller("upper")("ab"), str(operator.itemgetter(1)([5, 6]))]
        out.append(str(operator.attrgetter is attrgetter))
        for make in (lambda: attrgetter(UNDER + "class" + UNDER), lambda: attrgetter("real", "_x"),
                     lambda: attrgetter("real." + UNDER + "class" + UNDER), lambda: methodcaller(UNDER + "reduce_ex" + UNDER, 2),
                     lambda: methodcaller("_private")):
            try:
                make()
                out.append("reached")
            except ValueError:
                out.append("refused")
        return " ".join(out), {}

    def step(self, action):
        return "x", 0.0, True, False, {}
`

// The operator a program gets, injected or imported, is the confined copy: attrgetter and methodcaller
// with public names behave as the real ones; with a private or dunder name, anywhere in a dotted path,
// they raise ValueError. The static check allows operator.
func TestConfinedOperator(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	if problems, err := p.StaticCheck(ctx, operatorProgram, "games"); err != nil || len(problems) > 0 {
		t.Fatalf("static check: %v %v", problems, err)
	}
	prog, err := p.Load(ctx, operatorProgram)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	obs, err := env.Reset(ctx, 1)
	if want := "3.0 AB 6 True refused refused refused refused refused"; err != nil || obs != want {
		t.Fatalf("reset: %q %v, want %q", obs, err, want)
	}
}

// With Options.RepairFStrings a program whose f-string holds braces meant literally ({row col}) is
// repaired as the authors' loader repairs it and loads; without, the static check reports the syntax
// error. A program that parses is left as it is.
func TestRepairFStrings(t *testing.T) {
	ctx := context.Background()
	code := "class GridEnv:\n    def reset(self, seed=None):\n        text = f\"answer as {row col}, in {3 + 4} turns\"\n        return text, {}\n" +
		"    def step(self, a):\n        return 'x', 0.0, True, False, {}\n"
	plain := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	if problems, err := plain.StaticCheck(ctx, code, "games"); err != nil || len(problems) == 0 || !strings.Contains(problems[0], "syntax") {
		t.Fatalf("without the repair: %v %v", problems, err)
	}
	repairing := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1; o.RepairFStrings = true })
	prog, problems, err := repairing.LoadChecked(ctx, code, "games", DefaultStaticRules())
	if err != nil || len(problems) > 0 {
		t.Fatalf("with the repair: %v %v", problems, err)
	}
	defer prog.Close()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if obs, err := env.Reset(ctx, 0); err != nil || obs != "answer as {row col}, in 7 turns" {
		t.Fatalf("reset: %q %v", obs, err)
	}
}

// The standard-library modules admitted for the authors' programs pass the static check and load; the
// modules reached through them and the ones refused (docs/sandbox.md) do not pass it.
func TestAdmittedModules(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	body := "\nclass TEnv:\n    def reset(self, seed=None):\n        return %s, {}\n    def step(self, a):\n        return 'x', 0.0, True, False, {}\n"
	good := "import datetime, time, textwrap, cmath, numbers, unicodedata, difflib, operator" + strings.Replace(body, "%s",
		"'%s %d %s %s %s %d' % (datetime.date(2024, 1, 1).weekday(), int(time.monotonic() >= 0), textwrap.shorten('a b c', 5), cmath.sqrt(-1), unicodedata.name('a'), difflib.SequenceMatcher(None, 'ab', 'ab').ratio())", 1)
	if problems, err := p.StaticCheck(ctx, good, "games"); err != nil || len(problems) > 0 {
		t.Fatalf("admitted modules: %v %v", problems, err)
	}
	prog, err := p.Load(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	env, err := prog.NewEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if obs, err := env.Reset(ctx, 0); err != nil || obs != "0 1 a b c 1j LATIN SMALL LETTER A 1" {
		t.Errorf("reset: %q %v", obs, err)
	}
	env.Close()
	prog.Close()
	for _, bad := range []string{
		"import datetime" + strings.Replace(body, "%s", "str(datetime.sys)", 1),
		"import time" + strings.Replace(body, "%s", "str(time.clock_settime)", 1),
		"import calendar" + strings.Replace(body, "%s", "'x'", 1),
		"import zoneinfo" + strings.Replace(body, "%s", "'x'", 1),
		"import pickle" + strings.Replace(body, "%s", "'x'", 1),
		"import io" + strings.Replace(body, "%s", "'x'", 1),
		"import pathlib" + strings.Replace(body, "%s", "'x'", 1),
		"import inspect" + strings.Replace(body, "%s", "'x'", 1),
		"import threading" + strings.Replace(body, "%s", "'x'", 1),
		"import types" + strings.Replace(body, "%s", "'x'", 1),
	} {
		if problems, err := p.StaticCheck(ctx, bad, "games"); err != nil || len(problems) == 0 {
			t.Errorf("static check passed %q: %v", bad[:strings.Index(bad, "\n")], err)
		}
	}
}

// ResetShaped reports a reset that returned (observation, None), which the authors' validation refuses,
// and nothing for (observation, {}) or a bare observation.
func TestResetShape(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	for ret, want := range map[string]string{"('o', None)": "info is None, not a dict", "('o', {})": "", "'o'": ""} {
		code := "class REnv:\n    def reset(self, seed=None):\n        return " + ret + "\n    def step(self, a):\n        return 'x', 0.0, True, False, {}\n"
		prog, err := p.Load(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		env, err := prog.NewEnv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		obs, deviations, err := env.ResetShaped(ctx, 0)
		if err != nil || obs != "o" || strings.Join(deviations, "; ") != want {
			t.Errorf("reset returning %s: %q %v %v, want deviations %q", ret, obs, deviations, err, want)
		}
		env.Close()
		prog.Close()
	}
}
