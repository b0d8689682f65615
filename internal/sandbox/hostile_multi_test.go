package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spadekit/spade/internal/testenv"
)

// innocentSource is an ordinary env whose transcript must not depend on what ran before it in
// the pool; its source holds a secret that read_earlier_source.py looks for.
const innocentSource = `
import random

SECRET = "SPADE-EARLIER-SECRET-%s"


class Innocent:
    def reset(self, seed):
        self.rng = random.Random(seed)
        self.target = self.rng.randint(1, 5)
        self.n = 0
        return "seed %%d: guess 1..5" %% seed

    def step(self, action):
        self.n += 1
        if int(action) == self.target:
            return "right after %%d" %% self.n, 1.0, True, {"success": True}
        return ("higher" if int(action) < self.target else "lower"), -0.1 * self.n, self.n >= 5, {}
`

// turn is what a transcript records of a reset or a step.
type turn struct {
	Obs    string
	Reward float64
	Done   bool
}

var transcriptSeeds = []int64{0, 1, 2, 3}

// transcripts plays every seed of transcriptSeeds on program code, one episode after another and
// then all at once (concurrent episodes on fresh instances), and returns both; a failure to play
// is returned as an error (an attack may make it fail).
func transcripts(ctx context.Context, p *Pool, code string) (sequential, concurrent map[int64][]turn, err error) {
	prog, err := p.Load(ctx, code)
	if err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	defer prog.Close()
	episode := func(seed int64) ([]turn, error) {
		env, err := prog.NewEnv(ctx)
		if err != nil {
			return nil, fmt.Errorf("new: %w", err)
		}
		defer env.Close()
		obs, err := env.Reset(ctx, seed)
		if err != nil {
			return nil, fmt.Errorf("reset: %w", err)
		}
		out := []turn{{Obs: obs}}
		for i := 1; i <= 5; i++ {
			r, err := env.Step(ctx, fmt.Sprint(i))
			if err != nil {
				return nil, fmt.Errorf("step: %w", err)
			}
			out = append(out, turn{r.Observation, r.Reward, r.Done})
			if r.Done {
				break
			}
		}
		return out, nil
	}
	sequential, concurrent = map[int64][]turn{}, map[int64][]turn{}
	for _, seed := range transcriptSeeds {
		if sequential[seed], err = episode(seed); err != nil {
			return nil, nil, err
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, seed := range transcriptSeeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts, e := episode(seed)
			mu.Lock()
			defer mu.Unlock()
			concurrent[seed] = ts
			if e != nil {
				err = e
			}
		}()
	}
	wg.Wait()
	return sequential, concurrent, err
}

// hostileSource reads a program of testdata/hostile.
func hostileSource(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", name+".py"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// attack runs one hostile program the way the gate and rollout do and reports whether it reached
// its goal (with what showed it), given the innocent program's source and its transcripts alone.
type attack struct {
	name string
	// workers is the pool size the attack needs (1: attacker and victims share one worker).
	workers int
	run     func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (reached bool, detail string)
	// demo is false for attacks that need no isolation to fail (checked in Go or the harness alone).
	demo bool
	// roomy gives the attack's pool deadlines a loaded machine does not reach (roomyDeadlines): its
	// verdict is not a timeout, and a slow machine must not make it one.
	roomy bool
}

// roomyDeadlines gives a pool deadlines that a load of 10 on 2 cores does not reach for a program that
// does not run into them on purpose.
func roomyDeadlines(o *Options) {
	o.LoadTimeout, o.ResetTimeout, o.StepTimeout = 30*time.Second, 30*time.Second, 15*time.Second
}

// poolOptions is the options of the attack's pool on a layer: workers, and roomy deadlines when asked.
func (a attack) poolOptions(extra func(*Options)) func(*Options) {
	return func(o *Options) {
		o.Workers = a.workers
		if a.roomy {
			roomyDeadlines(o)
		}
		if extra != nil {
			extra(o)
		}
	}
}

// playOnce loads code and resets one instance.
func playOnce(ctx context.Context, p *Pool, code string) (string, error) {
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
	return env.Reset(ctx, 0)
}

var attacks = []attack{
	{name: "takeover_server", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		obs, err := playOnce(ctx, p, code)
		seq, _, terr := transcripts(ctx, p, innocent)
		if terr == nil && strings.Contains(fmt.Sprint(seq), "forged") {
			return true, fmt.Sprintf("the next program answered %v", seq[0])
		}
		return false, fmt.Sprintf("attacker: %q, %v; the next program: %v, %v", obs, err, seq, terr)
	}},
	{name: "read_earlier_source", workers: 2, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		secret := innocent[strings.Index(innocent, "SPADE-EARLIER-SECRET-"):][:len("SPADE-EARLIER-SECRET-")+16]
		// an earlier program on the same worker (a one-program pool would reuse it) ...
		if _, _, err := transcripts(ctx, p, innocent); err != nil {
			t.Fatalf("innocent: %v", err)
		}
		// ... and a concurrent one on another worker, alive while the reader runs
		prog, err := p.Load(ctx, innocent)
		if err != nil {
			t.Fatal(err)
		}
		defer prog.Close()
		env, err := prog.NewEnv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		obs, err := playOnce(ctx, p, code)
		return strings.Contains(obs, secret), fmt.Sprintf("reader: %q, %v", clipText(obs), err)
	}},
	{name: "steal_sibling_socket", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		prog, err := p.Load(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		defer prog.Close()
		var envs []*Env
		var details []string
		for seed := int64(1); seed <= 3; seed++ { // two victims reset first, then the last one steals
			env, err := prog.NewEnv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			obs, err := env.Reset(ctx, seed)
			details = append(details, fmt.Sprintf("reset %d: %q %v", seed, obs, err))
			envs = append(envs, env)
		}
		reached := strings.Contains(strings.Join(details, ";"), "(stole") && !strings.Contains(strings.Join(details, ";"), "(stole 0)")
		for i, env := range envs[:2] {
			r, err := env.Step(ctx, "go")
			details = append(details, fmt.Sprintf("step %d: %q %v", i+1, r.Observation, err))
			reached = reached || r.Observation == "forged"
		}
		return reached, strings.Join(details, "; ")
	}},
	{name: "couple_through_tmp", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		first, err1 := playOnce(ctx, p, code) // leaves its marks
		later, err2 := playOnce(ctx, p, code) // a later program looks for them
		prog, err := p.Load(ctx, code)        // and sibling episodes of one program
		if err != nil {
			t.Fatal(err)
		}
		defer prog.Close()
		var sibling string
		var err3 error
		for i := 0; i < 2; i++ {
			env, err := prog.NewEnv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			sibling, err3 = env.Reset(ctx, int64(i))
		}
		reached := strings.HasPrefix(later, "coupled") || strings.HasPrefix(sibling, "coupled")
		return reached, fmt.Sprintf("first %q %v; later %q %v; sibling %q %v", first, err1, later, err2, sibling, err3)
	}},
	{name: "sabotage_worker", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		obs, err := playOnce(ctx, p, code)
		_, _, terr := transcripts(ctx, p, innocent)
		return terr != nil, fmt.Sprintf("saboteur: %q %v; the next program: %v", obs, err, terr)
	}},
	{name: "forge_numbers", workers: 1, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
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
		if _, err := env.Reset(ctx, 0); err != nil {
			t.Fatal(err)
		}
		cpu := env.CPUSeconds()
		r, err := env.Step(ctx, "go")
		if err == nil || !errors.Is(err, ErrOutput) {
			return true, fmt.Sprintf("a %d-byte observation passed: %v", len(r.Observation), err)
		}
		return cpu < 0, fmt.Sprintf("cpu %v, step %v", cpu, err)
	}},
	{name: "template_thread", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		obs, err := playOnce(ctx, p, code)
		return strings.HasPrefix(obs, "coupled"), fmt.Sprintf("reset: %q, %v", obs, err)
	}},
	{name: "sysv_couple", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		first, err1 := playOnce(ctx, p, code) // one program leaves its marker
		later, err2 := playOnce(ctx, p, code) // the next program on the reused worker looks for it
		sibling := ""
		var err3 error
		if prog, err := p.Load(ctx, code); err == nil { // and two episodes of one program
			defer prog.Close()
			for i := 0; i < 2; i++ {
				if env, err := prog.NewEnv(ctx); err == nil {
					defer env.Close()
					sibling, err3 = env.Reset(ctx, int64(i))
				}
			}
		}
		return later == "coupled" || sibling == "coupled", fmt.Sprintf("first %q %v; later %q %v; sibling %q %v", first, err1, later, err2, sibling, err3)
	}},
	{name: "harness_patch", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		prog, err := p.Load(ctx, code)
		if err != nil {
			return false, fmt.Sprintf("load: %v", err)
		}
		defer prog.Close()
		var details []string
		reached := false
		for seed := int64(1); seed <= 3; seed++ { // each episode leaves notes for the instances forked ahead
			env, err := prog.NewEnv(ctx)
			if err != nil {
				return false, fmt.Sprintf("new: %v", err)
			}
			defer env.Close()
			obs, err := env.Reset(ctx, seed)
			details = append(details, fmt.Sprintf("reset %d: %q %v", seed, obs, err))
			reached = reached || strings.HasPrefix(obs, "coupled")
		}
		return reached, strings.Join(details, "; ")
	}},
	{name: "memory_tree", workers: 1, demo: true, roomy: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		obs, err := playOnce(ctx, p, code)
		if err != nil && !errors.Is(err, ErrMemory) {
			t.Errorf("memory_tree ended with %v, want a memory error", err)
		}
		return strings.HasPrefix(obs, "held"), fmt.Sprintf("reset: %q, %v", obs, err)
	}},
	{name: "detached_worker", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		prog, err := p.Load(ctx, code)
		if err != nil {
			return false, fmt.Sprintf("load: %v", err)
		}
		defer prog.Close()
		env, err := prog.NewEnv(ctx)
		if err != nil {
			return false, fmt.Sprintf("new: %v", err)
		}
		defer env.Close()
		obs, err := env.Reset(ctx, 0)
		if err != nil {
			return false, fmt.Sprintf("reset: %q %v", obs, err)
		}
		_, err = env.Step(ctx, "look")
		return strings.Contains(fmt.Sprint(err), "still working"), fmt.Sprintf("step: %v", err)
	}},
	{name: "zombie_leader", workers: 1, demo: true, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		first, err1 := playOnce(ctx, p, code) // plants the thread behind a zombie leader
		later, err2 := playOnce(ctx, p, code) // the next program on the reused worker looks for it
		return strings.HasPrefix(later, "ghost"), fmt.Sprintf("first %q %v; later %q %v", first, err1, later, err2)
	}},
	{name: "forge_records", workers: 1, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		prog, err := p.Load(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		defer prog.Close()
		step := func(action string) (StepResult, error) {
			env, err := prog.NewEnv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			if _, err := env.Reset(ctx, 0); err != nil {
				t.Fatal(err)
			}
			return env.Step(ctx, action)
		}
		big, errBig := step("big")
		if !errors.Is(errBig, ErrOutput) {
			return true, fmt.Sprintf("a %d-byte info passed: %v", len(big.Info), errBig)
		}
		dup, errDup := step("dup")
		if !errors.Is(errDup, ErrProtocol) || !strings.Contains(errDup.Error(), "twice") {
			return true, fmt.Sprintf("info %s passed: %v", dup.Info, errDup)
		}
		return false, fmt.Sprintf("big: %v; dup: %v", errBig, errDup)
	}},
	{name: "str_raises", workers: 1, run: func(ctx context.Context, t *testing.T, p *Pool, code, innocent string) (bool, string) {
		_, err := playOnce(ctx, p, code)
		return !errors.Is(err, ErrEnv), fmt.Sprintf("reset: %v", err)
	}},
}

func clipText(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

func newInnocent(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(innocentSource, hex.EncodeToString(b))
}

// TestHostileUnconfinedReachTheirGoals shows that each attack of TestHostileMultiProgram works
// where nothing stops it (no isolation layer, the harness's hardening off, workers reused as
// they were), so that their containment proves something.
func TestHostileUnconfinedReachTheirGoals(t *testing.T) {
	testenv.Require(t, os.Geteuid() == 0, "needs root: the unconfined worker must run as uid 65534, not as the test's user")
	cleanupHostMarks := func() {
		os.Remove("/tmp/spade-coupling")
		os.Remove("/dev/shm/spade-coupling")
		if id, err := unix.SysvShmGet(0x5AD3, 0, 0); err == nil { // sysv_couple.py's segment
			unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		}
	}
	cleanupHostMarks()
	t.Cleanup(cleanupHostMarks)
	for _, a := range attacks {
		if !a.demo {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			p := newTestPool(t, IsolationNone, a.poolOptions(func(o *Options) { o.unhardened = true; o.WorkerMemoryLimit = -1 }))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if reached, detail := a.run(ctx, t, p, hostileSource(t, a.name), newInnocent(t)); !reached {
				t.Fatalf("the attack did not reach its goal unconfined, so its containment proves nothing: %s", detail)
			} else {
				t.Logf("reached unconfined: %s", clipText(detail))
			}
		})
	}
}

// TestHostileMultiProgram runs each hostile program the way the gate and rollout use a pool
// (programs one after another on one reused worker, then concurrent episodes) on every layer:
// the attack must not reach its goal, and an innocent program's transcripts (sequential and
// concurrent episodes) must be exactly what they are when it runs alone in a fresh pool.
func TestHostileMultiProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("every hostile program on every layer; skipped with -short")
	}
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			innocent := newInnocent(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			aloneSeq, aloneConc, err := transcripts(ctx, newTestPool(t, iso, nil), innocent)
			if err != nil {
				t.Fatalf("innocent alone: %v", err)
			}
			if !reflect.DeepEqual(aloneSeq, aloneConc) {
				t.Fatalf("innocent alone: sequential %v, concurrent %v", aloneSeq, aloneConc)
			}
			for _, a := range attacks {
				t.Run(a.name, func(t *testing.T) {
					p := newTestPool(t, iso, a.poolOptions(nil))
					if reached, detail := a.run(ctx, t, p, hostileSource(t, a.name), innocent); reached {
						t.Fatalf("the attack reached its goal: %s", detail)
					} else {
						t.Logf("contained: %s", clipText(detail))
					}
					seq, conc, err := transcripts(ctx, p, innocent)
					if err != nil {
						t.Fatalf("innocent after %s: %v", a.name, err)
					}
					if !reflect.DeepEqual(seq, aloneSeq) || !reflect.DeepEqual(conc, aloneConc) {
						t.Fatalf("innocent after %s: %v and %v, alone %v", a.name, seq, conc, aloneSeq)
					}
				})
			}
		})
	}
}

// TestHarnessSealStopsPatches shows that the harness's seal is what contains a program that replaces
// the harness's own code or state while it loads: hardened but unsealed, harness_patch.py couples its
// episodes on the landlock layer (the instances forked after its load skip their landlock domain);
// sealed, each patch below is refused at load on a reused worker, which then serves the innocent
// program with its transcripts unchanged.
func TestHarnessSealStopsPatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var patch attack
	for _, a := range attacks {
		if a.name == "harness_patch" {
			patch = a
		}
	}
	code := hostileSource(t, "harness_patch")
	unsealed := newTestPool(t, IsolationLandlock, func(o *Options) { o.Workers = 1; o.unsealed = true })
	if reached, detail := patch.run(ctx, t, unsealed, code, ""); !reached {
		t.Fatalf("hardened and unsealed, the patch did not couple episodes, so the seal's test proves nothing: %s", detail)
	}
	innocent := newInnocent(t)
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	aloneSeq, _, err := transcripts(ctx, p, innocent)
	if err != nil {
		t.Fatal(err)
	}
	env := "\n\nclass PatchedEnv:\n    def reset(self, seed=None):\n        return 'ok', {}\n\n    def step(self, action):\n        return 'x', 0.0, True, False, {}\n"
	// a patch of the reply path itself (the socket class, the encoder) leaves the template unable to say
	// why it refuses: the load fails on Go's side (a crash, a malformed reply) instead
	patches := []struct{ name, code string }{
		{"a harness function", "import sys\nsys.modules['__main__'].restrict_to = lambda own: False"},
		{"a function's code", "import sys\nh = sys.modules['__main__']\nh.make_scratch.__code__ = h.wipe.__code__"},
		{"a function's defaults", "import sys\nh = sys.modules['__main__']\nh.verify_seal.__defaults__ = None"},
		{"a list inside a constant", "import sys\nh = sys.modules['__main__']\nh.ROOT_ENTRIES.append('x')"},
		{"a module the harness calls", "import os\nos.fork = lambda: 0"},
		{"a builtin", "import sys\nsys.modules['builtins'].len = lambda x: 0"},
		{"a module in sys.modules", "import sys\nsys.modules['json'] = sys"},
		{"the program's output channel", "import sys, io\nsys.stdout = io.StringIO()"},
		{"the hardening switch", "import sys\nsys.modules['__main__'].HARDEN = False"},
		{"reply path: a class the harness uses", "import socket\nsocket.socket.sendall = lambda *a: None"},
		{"reply path: the encoder's settings", "import sys\nsys.modules['__main__']._dumps.__self__.item_separator = ';'"},
	}
	for _, patch := range patches {
		_, err := playOnce(ctx, p, patch.code+env)
		tainted := errors.Is(err, ErrEnv) && strings.Contains(fmt.Sprint(err), "TemplateTainted")
		if !tainted && !(strings.HasPrefix(patch.name, "reply path") && err != nil) {
			t.Errorf("%s: load gave %v, want TemplateTainted", patch.name, err)
		}
		seq, _, err := transcripts(ctx, p, innocent)
		if err != nil || !reflect.DeepEqual(seq, aloneSeq) {
			t.Fatalf("the innocent program after %s: %v %v, alone %v", patch.name, seq, err, aloneSeq)
		}
	}
	// the seal's record itself is not reachable: replacing the global holding it changes nothing
	if obs, err := playOnce(ctx, p, "import sys\nsys.modules['__main__'].SEAL = ()"+env); err != nil || obs != "ok" {
		t.Fatalf("a program that only rebinds SEAL: %q %v", obs, err)
	}
	if _, err := playOnce(ctx, p, code); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "TemplateTainted") {
		t.Fatalf("harness_patch.py sealed: %v", err)
	}
}

// overLimitAtReset is a program whose processes pass a 1 GiB worker limit in reset: its __init__ forks
// four children that fill 200 MiB each and hold it (under the limit), and reset forks a fifth that fills
// 300 MiB; then reset replies at once (REPLY) or sleeps past its deadline. Most of the memory is filled
// before reset's deadline starts, so a loaded machine reaches that deadline long after the limit.
const overLimitAtReset = `
import os
import time

REPLY = %s


def hold(mib):
    r, w = os.pipe()
    if os.fork() == 0:
        blob = b"x" * (mib << 20)
        os.write(w, b"1")
        time.sleep(120 + len(blob) * 0)
        os._exit(0)
    os.read(r, 1)


class OverLimitEnv:
    def __init__(self):
        for _ in range(4):
            hold(200)

    def reset(self, seed=None):
        hold(300)
        if not REPLY:
            time.sleep(600)
        return "held", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
`

// TestMemoryVerdictWithoutTheWatchdog shows that the memory verdict does not rest on the watchdog
// winning a race: with its reads switched off (a tick of an hour), a program whose processes together
// pass the worker's limit is still a memory error, both when its call's deadline passes and when its
// call replies while the memory is held, on the layers with a PID namespace.
func TestMemoryVerdictWithoutTheWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a gigabyte per layer; skipped with -short")
	}
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces} {
		for _, reply := range []bool{false, true} {
			name := map[bool]string{false: "deadline", true: "reply"}[reply]
			t.Run(string(iso)+"/"+name, func(t *testing.T) {
				// (the instance's start fills 800 MiB: a load deadline a loaded machine does not reach)
				p := newTestPool(t, iso, func(o *Options) {
					o.Workers, o.memoryTick, o.LoadTimeout, o.ResetTimeout = 1, time.Hour, 2*time.Minute, 15*time.Second
				})
				code := fmt.Sprintf(overLimitAtReset, map[bool]string{false: "False", true: "True"}[reply])
				obs, err := playOnce(context.Background(), p, code)
				if !errors.Is(err, ErrMemory) {
					t.Fatalf("reset gave %q, %v; want a memory error", obs, err)
				}
			})
		}
	}
}
