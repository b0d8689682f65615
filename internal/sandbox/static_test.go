package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStaticCheck(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), nil)
	ctx := context.Background()
	cases := []struct {
		name, code, setting, want string
	}{
		{"ok", counterEnv, "games", ""},
		{"re.compile is fine", "import re\nP = re.compile(\"a+\")\n" + counterEnv, "games", ""},
		{"os.system via attribute", counterEnv + "\nimport math\nmath.system\n", "games", "attribute 'system'"},
		{"syntax", "class A(:\n", "games", "syntax error"},
		{"no class", "x = 1\n", "games", "expected a class with reset() and step()"},
		{"two classes", counterEnv + "\nclass B:\n    def reset(self, s): return ''\n    def step(self, a): return '',0,True,{}\n", "games", "none named ...Env"},
		{"tools missing", counterEnv, "tools", "no tools() method"},
		{"import os", "import os\n" + counterEnv, "games", "import of 'os'"},
		{"from subprocess", "from subprocess import run\n" + counterEnv, "games", "import from 'subprocess'"},
		{"eval", counterEnv + "\nx = eval('1')\n", "games", "'eval'"},
		{"open", counterEnv + "\nx = open('/etc/passwd')\n", "games", "'open'"},
		{"dunder import", counterEnv + "\nx = __import__('os')\n", "games", "'__import__'"},
		{"subclasses", counterEnv + "\nx = ().__class__.__base__.__subclasses__()\n", "games", "'__base__'"},
		{"getattr computed", counterEnv + "\nimport math\nx = getattr(math, 'sq' + 'rt')\n", "games", "getattr()"},
		{"dunder string", counterEnv + "\nx = '__globals__'\n", "games", "dunder string"},
		// routes from a string to code through allowed modules: each is refused by name
		{"get_type_hints", counterEnv + "\nimport typing\nx = typing.get_type_hints(Counter)\n", "games", "get_type_hints"},
		{"get_type_hints imported", "from typing import get_type_hints\n" + counterEnv, "games", "get_type_hints"},
		{"get_type_hints on an alias", counterEnv + "\nimport typing\nt = typing\nx = t.get_type_hints(Counter)\n", "games", "get_type_hints"},
		{"ForwardRef", counterEnv + "\nimport typing\nx = typing.ForwardRef('1')\n", "games", "ForwardRef"},
		{"singledispatch", counterEnv + "\nimport functools\nf = functools.singledispatch(len)\n", "games", "singledispatch"},
		{"star import", "from typing import *\n" + counterEnv, "games", "import * is not allowed"},
		{"allow_pickle", counterEnv + "\nimport numpy as np\nx = np.load('a.npy', allow_pickle=True)\n", "games", "allow_pickle"},
		{"sympy", "import sympy\n" + counterEnv, "games", "import of 'sympy'"},
		{"numpy's f2py", counterEnv + "\nimport numpy as np\nx = np.f2py\n", "games", "'f2py'"},
		{"numpy's ctypeslib", "from numpy import ctypeslib\n" + counterEnv, "games", "ctypeslib"},
		// numpy beyond arrays and math, in every spelling the check follows (what the view withholds)
		{"np.load allow_pickle by position", counterEnv + "\nimport numpy as np\nx = np.load('a.npy', None, True)\n", "games", "third positional argument"},
		{"np.load", counterEnv + "\nimport numpy as np\nx = np.load('a.npy')\n", "games", "numpy.load is not offered"},
		{"injected np.memmap", counterEnv + "\nx = np.memmap('m', mode='w+', shape=(4,))\n", "games", "numpy.memmap is not offered"},
		{"alias of numpy's lib", counterEnv + "\nimport numpy as n\nf = n.lib\ng = f.format\n", "games", "numpy.lib is not offered"},
		{"numpy testing runstring", counterEnv + "\nimport numpy\nnumpy.testing.runstring('1', {})\n", "games", "numpy.testing is not offered"},
		{"from numpy.lib import", "from numpy.lib.stride_tricks import as_strided\n" + counterEnv, "games", "numpy.lib.stride_tricks is not offered"},
		{"import numpy.testing", "import numpy.testing\n" + counterEnv, "games", "import of numpy.testing is not allowed"},
		{"from numpy import loadtxt", "from numpy import loadtxt\n" + counterEnv, "games", "numpy.loadtxt is not offered"},
		{"getattr numpy constant", counterEnv + "\nimport numpy as np\nx = getattr(np, 'fromfile')\n", "games", "numpy.fromfile is not offered"},
		{"numpy's random submodule", counterEnv + "\nimport numpy as np\nx = np.random.bit_generator\n", "games", "numpy.random.bit_generator is not offered"},
		{"ordinary numpy", counterEnv + "\nimport numpy as np\nfrom numpy.linalg import solve\nfrom numpy import random\nx = np.linalg.norm(np.arange(3.0)) + np.random.default_rng(1).random() + np.fft.fft(np.ones(4))[0].real\n", "games", ""},
		// the rules beyond name lookups (harness.py, more_static_problems)
		{"dunder inside a string", counterEnv + "\nx = 'a.__globals__'\n", "games", "dunder name '__globals__' in a string"},
		{"format field path", counterEnv + "\nx = '{0.__init__.__globals__}'.format(Counter())\n", "games", "format field"},
		{"format field flagged attribute", counterEnv + "\nx = '{0.gi_frame.f_back}'.format(1)\n", "games", "format field"},
		{"format_map field in a spec", counterEnv + "\nx = '{a:{b._x}}'.format_map({})\n", "games", "format field"},
		{"Formatter", counterEnv + "\nimport string\nf = string.Formatter()\n", "games", "'Formatter'"},
		{"Formatter imported", "from string import Formatter\n" + counterEnv, "games", "'Formatter'"},
		{"match class keyword", counterEnv + "\ndef f(x):\n    match x:\n        case type(__subclasses__=s):\n            return s\n", "games", "match pattern on attribute '__subclasses__'"},
		{"getattr alias", counterEnv + "\ng = getattr\nx = g(Counter, 'reset')\n", "games", "getattr used other than as a direct call"},
		{"getattr passed on", counterEnv + "\nimport functools\nx = functools.reduce(getattr, ['reset'], Counter)\n", "games", "getattr used other than"},
		{"getattr flagged constant", counterEnv + "\nimport math\nx = getattr(math, 'modules')\n", "games", "getattr() of 'modules'"},
		{"private module attribute", counterEnv + "\nimport random\nx = random._os\n", "games", "attribute '_os' of module random"},
		{"module's sys", counterEnv + "\nimport typing\nx = typing.sys\n", "games", "attribute 'sys' of module typing"},
		{"aliased module's sys", counterEnv + "\nimport dataclasses as dc\nx = dc.sys.modules\n", "games", "attribute 'sys' of module dc"},
		{"module reached through a module", counterEnv + "\nimport dataclasses\nx = dataclasses.inspect.currentframe()\n", "games", "is the module inspect"},
		{"private import", "from random import _os\n" + counterEnv, "games", "import of '_os'"},
		{"module imported from a module", "from dataclasses import inspect\n" + counterEnv, "games", "is the module inspect"},
		{"ordinary format", counterEnv + "\nx = '{} {:>3} {name} {0[1]}'.format(1, 2, name=3)\n", "games", ""},
		{"ordinary getattr", counterEnv + "\nx = getattr(Counter, 'reset', None)\n", "games", ""},
		{"ordinary module use", counterEnv + "\nimport collections.abc\nx = collections.abc.Mapping\nimport json\ny = json.decoder.JSONDecodeError\n", "games", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problems, err := p.StaticCheck(ctx, c.code, c.setting)
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(problems, "; ")
			if c.want == "" && len(problems) > 0 {
				t.Fatalf("want pass, got %s", joined)
			}
			if c.want != "" && !strings.Contains(joined, c.want) {
				t.Fatalf("want a problem containing %q, got %q", c.want, joined)
			}
		})
	}
}

// TestLoadCheckedRefusesBeforeRunning: LoadChecked runs the static check in the template before the
// program's code: a refused program (it imports os, then would spin forever at import) comes back at
// once with the check's problems and was never executed, its worker serves the next program; a clean
// program loads, with the check's share of the time.
func TestLoadCheckedRefusesBeforeRunning(t *testing.T) {
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			// (a load deadline a loaded machine does not reach: a program that ran would spin until it)
			p := newTestPool(t, iso, func(o *Options) { o.Workers = 1; o.LoadTimeout = time.Minute })
			ctx := context.Background()
			began := time.Now()
			prog, problems, err := p.LoadChecked(ctx, "import os\nwhile True:\n    pass\n"+counterEnv, "games", DefaultStaticRules())
			if err != nil || prog != nil || len(problems) == 0 || !strings.Contains(strings.Join(problems, "; "), "os") {
				t.Fatalf("LoadChecked of a refused program: %v, %v, %v", prog, problems, err)
			}
			if took := time.Since(began); took > p.Options().LoadTimeout/2 {
				t.Fatalf("the refused program took %v: it ran", took)
			}
			prog, problems, err = p.LoadChecked(ctx, counterEnv, "games", DefaultStaticRules())
			if err != nil || len(problems) != 0 || prog == nil || prog.Class == "" || prog.StaticTime <= 0 {
				t.Fatalf("LoadChecked of a clean program: %+v, %v, %v", prog, problems, err)
			}
			env, err := prog.NewEnv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := env.Reset(ctx, 3); err != nil {
				t.Fatal(err)
			}
			prog.Close()
		})
	}
}

// typing.get_type_hints runs a string annotation as code in the module's globals: with the real
// builtins (the harness's hardening off) the program below imports os through text it built at run
// time. Hardened, the module's builtins have no exec, and its __import__ admits only what the
// program's import statements name, so neither route works even without the static check; and the
// static check refuses the gadget.
func TestTypeHintsGadget(t *testing.T) {
	ctx := context.Background()
	code := `import typing
src = "import o" + "s\nRESULT.append(o" + "s.getpid() > 0)"
RESULT = []
box = {"RESULT": RESULT}
def probe(x: "exec(src, box)"):
    return x
def probe_import(x: "__imp" + "ort__('o' + 's').getpid()"):
    return x
class GadgetEnv:
    def reset(self, seed=None):
        if seed == 1:
            return "imported os: %s" % (typing.get_type_hints(probe_import)["x"] > 0), {}
        typing.get_type_hints(probe)
        return "imported os: %s" % RESULT[-1], {}
    def step(self, action):
        return "x", 0.0, True, False, {}
`
	unhardened := newTestPool(t, IsolationNone, func(o *Options) { o.Workers = 1; o.unhardened = true })
	for seed := int64(0); seed <= 1; seed++ {
		if obs, err := resetOnce(ctx, unhardened, code, seed); err != nil || obs != "imported os: True" {
			t.Fatalf("the gadget (seed %d) with the real builtins: %q %v", seed, obs, err)
		}
	}
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	if obs, err := resetOnce(ctx, p, code, 0); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "name 'exec' is not defined") {
		t.Fatalf("the gadget's exec in the program's builtins: %q %v", obs, err)
	}
	if obs, err := resetOnce(ctx, p, code, 1); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "ImportRefused") {
		t.Fatalf("the gadget's __import__ of os: %q %v", obs, err)
	}
	problems, err := p.StaticCheck(ctx, code, "games")
	if err != nil || len(problems) == 0 || !strings.Contains(strings.Join(problems, "; "), "get_type_hints") {
		t.Fatalf("the static check let the gadget through: %q %v", problems, err)
	}
}

// resetOnce loads code and resets one instance with seed.
func resetOnce(ctx context.Context, p *Pool, code string, seed int64) (string, error) {
	prog, err := p.Load(ctx, code)
	if err != nil {
		return "", err
	}
	defer prog.Close()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		return "", err
	}
	defer env.Close()
	return env.Reset(ctx, seed)
}
