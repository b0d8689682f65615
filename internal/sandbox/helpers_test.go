package sandbox

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/testenv"
)

// testPython is the interpreter tests use: $SPADE_PYTHON, else Debian's /usr/bin/python3.
func testPython(t testing.TB) string {
	if p := os.Getenv(PythonEnv); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// newTestPool starts a pool under iso. A namespaces or landlock layer the machine lacks skips the test,
// except under CI (testenv.CI); any other error fails it.
func newTestPool(t testing.TB, iso Isolation, mutate func(*Options)) *Pool {
	t.Helper()
	opts := Options{Python: testPython(t), Isolation: iso, Workers: 4, StepTimeout: 2 * time.Second, LoadTimeout: 3 * time.Second, ResetTimeout: 3 * time.Second, CPUSeconds: 5,
		WorkerMemoryLimit: 1 << 30}
	if iso == IsolationNone {
		opts.AllowUnsafe = true
	}
	if mutate != nil {
		mutate(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := NewPool(ctx, opts)
	if err != nil {
		if iso == IsolationNamespaces || iso == IsolationLandlock {
			testenv.SkipUnlessCI(t, "isolation %s unavailable here: %v", iso, err)
		}
		t.Fatalf("NewPool(%s): %v", iso, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// settle is how long a test waits for what happens at once on a quiet machine (a process to end, a
// directory to empty, output to arrive) before it says it did not: a load of 10 on 2 cores must not reach
// it, and the wait ends as soon as the condition holds.
const settle = 30 * time.Second

// isoUnderTest is the layer most tests use: $SPADE_TEST_ISOLATION, else bwrap.
func isoUnderTest() Isolation {
	if v := os.Getenv("SPADE_TEST_ISOLATION"); v != "" {
		return Isolation(v)
	}
	return IsolationBwrap
}
