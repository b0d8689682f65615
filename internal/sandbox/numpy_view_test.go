package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// numpyProbe reports, in reset's observation, what a program with no static check reaches of numpy at
// run time: each withheld route through an alias and a computed getattr, a refused submodule import,
// what an array's ctypes hands out, and an ordinary computation.
const numpyProbe = `
import numpy as np


class Probe:
    def reset(self, seed=None):
        n = np
        seen = []
        for name in ["lo" + "ad", "mem" + "map", "tes" + "ting", "l" + "ib", "from" + "file", "loadtxt", "save", "ctypeslib", "frombuffer"]:
            if hasattr(n, name):
                seen.append(name)
        if hasattr(__import__("numpy.lib.stride_tricks"), "lib"):
            seen.append("import numpy.lib")
        try:
            from numpy import testing
            seen.append("numpy.testing")
        except ImportError:
            pass
        try:
            from numpy.random import bit_generator
            seen.append("numpy.random.bit_generator")
        except ImportError:
            pass
        kind = type(getattr(np.zeros(2).ctypes, "_ctypes")).__name__
        rng = np.random.default_rng(3)
        value = float(np.linalg.norm(np.array([3.0, 4.0]))) + float(np.fft.fft(np.ones(4))[0].real) + float(np.emath.sqrt(4.0))
        return "%s|%s|%.1f|%d" % (",".join(seen), kind, value, int(rng.integers(0, 10**6) >= 0)), {}

    def step(self, action):
        return "x", 0.0, True, False, {}
`

// TestNumpyViewWithholdsRoutesAtRunTime: with the static check off, a hardened program's numpy has none
// of the withheld routes however it spells them (alias, computed getattr, __import__ of numpy.lib, from-import of a
// submodule of an offered one), its arrays' ctypes is numpy's stand-in, and arrays, linear algebra,
// FFTs, emath and random generators work.
func TestNumpyViewWithholdsRoutesAtRunTime(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	ctx := context.Background()
	prog, err := p.Load(ctx, numpyProbe)
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
	if err != nil {
		t.Fatal(err)
	}
	// 5 (norm of 3,4) + 4 (sum of ones) + 2 (sqrt of 4) = 11
	if want := "|_missing_ctypes|11.0|1"; obs != want {
		t.Errorf("reset: %q, want %q (withheld routes reached before the first |)", obs, want)
	}
}

// TestSparseScratchFileCountsAtItsLength: a sparse file as long as the scratch limit fills the scratch
// directory (it counts at its length, not at the blocks it holds yet), so the next file opened for
// writing is refused; the instance's reply is an output error.
func TestSparseScratchFileCountsAtItsLength(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1; o.ScratchBytes = 1 << 20 })
	ctx := context.Background()
	code := `
class Sparse:
    def reset(self, seed=None):
        with open("a.bin", "wb") as f:
            f.truncate(1 << 20)
        with open("b.bin", "wb") as f:
            f.write(b"x")
        return "both opened", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
`
	prog, err := p.Load(ctx, code)
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
	if !errors.Is(err, ErrOutput) || !strings.Contains(err.Error(), "scratch") {
		t.Fatalf("reset: %q, %v; want an output error for a full scratch directory", obs, err)
	}
}
