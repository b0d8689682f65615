package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileRoot is the folder of the hostile suites: every env program below it, in any subfolder, is
// one attack of the property test.
var hostileRoot = filepath.Join("..", "..", "testdata", "hostile")

// hostilePrograms lists the attacks below root: every .py file, in any subfolder, whose header has an
// `# attack:` line and that defines reset (an env program). So a benchmark answer (no env) and a
// scorer of spade's own (no attack line) are not attacks here, and a new attack joins the suite as a
// file, with no test code to write.
func hostilePrograms(t testing.TB, root string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".py" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if isAttack(data) {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("hostile programs under %s: %v", root, err)
	}
	sort.Strings(paths)
	return paths
}

// isAttack reports whether a program's source is an attack env: an `# attack:` line among its
// leading comment lines and a reset method.
func isAttack(source []byte) bool {
	header := false
	sc := bufio.NewScanner(bytes.NewReader(source))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		header = header || strings.HasPrefix(line, "# attack:")
	}
	return header && bytes.Contains(source, []byte("def reset("))
}

// TestHostileProgramsDiscovered checks the discovery the property test relies on: every attack of
// the suite is found, in subfolders too, and neither a benchmark answer nor a scorer is taken for one.
func TestHostileProgramsDiscovered(t *testing.T) {
	found := map[string]bool{}
	for _, p := range hostilePrograms(t, hostileRoot) {
		rel, _ := filepath.Rel(hostileRoot, p)
		found[rel] = true
	}
	for _, want := range []string{"memory_tree.py", "takeover_server.py", "gate_small_seeds.py"} {
		if !found[want] {
			t.Errorf("%s not among the attacks found: %v", want, found)
		}
	}
	for name := range found {
		if strings.HasPrefix(name, "answers"+string(filepath.Separator)) || strings.HasPrefix(name, "scorers"+string(filepath.Separator)) {
			t.Errorf("%s taken for an attack", name)
		}
	}
	// a new attack in a new subfolder joins without test code; a file that is no env does not
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "new", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"new/deeper/attack.py": "# attack: something new\n# expect: x\nclass E:\n    def reset(self, seed=None):\n        return 'x', {}\n",
		"new/answer.py":        "# attack: an answer, no env\nprint(1)\n",
		"new/scorer.py":        "\"\"\"a scorer\"\"\"\nclass S:\n    def reset(self, seed=None):\n        return 'x', {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := hostilePrograms(t, dir); len(got) != 1 || !strings.HasSuffix(got[0], filepath.Join("new", "deeper", "attack.py")) {
		t.Errorf("attacks found in %v: %v, want new/deeper/attack.py alone", files, got)
	}
}

// transcriptBytes plays every seed of transcriptSeeds on program code, one episode after another and
// then all at once (concurrent episodes on fresh instances), and writes down everything each reset
// and step returned, byte for byte (the observation, the reward's exact value, the flags, the info's
// JSON): two runs of an innocent program agree exactly when nothing reached it.
func transcriptBytes(ctx context.Context, p *Pool, code string) ([]byte, error) {
	prog, err := p.Load(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer prog.Close()
	episode := func(seed int64) ([]byte, error) {
		env, err := prog.NewEnv(ctx)
		if err != nil {
			return nil, fmt.Errorf("new: %w", err)
		}
		defer env.Close()
		obs, err := env.Reset(ctx, seed)
		if err != nil {
			return nil, fmt.Errorf("reset: %w", err)
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "seed %d reset %q\n", seed, obs)
		for i := 1; i <= 5; i++ {
			r, err := env.Step(ctx, fmt.Sprint(i))
			if err != nil {
				return nil, fmt.Errorf("step: %w", err)
			}
			fmt.Fprintf(&b, "step %d %q %x %v %v %v %v %s\n", i, r.Observation, math.Float64bits(r.Reward), r.Done,
				r.Terminated, r.Truncated, r.Shape, r.Info)
			if r.Done {
				break
			}
		}
		return b.Bytes(), nil
	}
	var out bytes.Buffer
	for _, seed := range transcriptSeeds {
		b, err := episode(seed)
		if err != nil {
			return nil, err
		}
		out.Write(b)
	}
	concurrent := make([][]byte, len(transcriptSeeds))
	errs := make([]error, len(transcriptSeeds))
	var wg sync.WaitGroup
	for i, seed := range transcriptSeeds {
		wg.Go(func() { concurrent[i], errs[i] = episode(seed) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out.WriteString("concurrent\n")
	for _, b := range concurrent {
		out.Write(b)
	}
	return out.Bytes(), nil
}

// propertyOptions are the options of the property test's pools: two workers (the hostile program
// on one, the innocent one beside it on the other, then the innocent one again on the worker the
// hostile program used), and deadlines that a loaded machine does not reach for the innocent
// program; the hostile program's calls are bounded by hostileCall instead.
func propertyOptions(o *Options) {
	o.Workers = 2
	o.LoadTimeout, o.ResetTimeout, o.StepTimeout = 10*time.Second, 30*time.Second, 15*time.Second
	o.AddressSpace = 512 << 20
}

// hostileCall bounds each reset and step of a hostile program in the property test (a cancelled
// call kills the instance, as a deadline does).
const hostileCall = 2 * time.Second

// playHostile loads a hostile program, resets one instance and steps it a few times, then a second
// instance; what fails is ignored (the point is what the program leaves behind or does meanwhile).
func playHostile(ctx context.Context, p *Pool, code string) {
	prog, err := p.Load(ctx, code)
	if err != nil {
		return
	}
	defer prog.Close()
	for episode := int64(0); episode < 2; episode++ {
		env, err := prog.NewEnv(ctx)
		if err != nil {
			return
		}
		call, cancel := context.WithTimeout(ctx, hostileCall)
		_, err = env.Reset(call, episode)
		cancel()
		for i := 0; i < 3 && (err == nil || errors.Is(err, ErrEnv)); i++ {
			call, cancel := context.WithTimeout(ctx, hostileCall)
			_, err = env.Step(call, "7")
			cancel()
		}
		env.Close()
	}
}

// TestInnocentTranscriptBesideAnyHostile is the property: an innocent env's transcripts (every
// reset and step it returned, byte for byte, episodes one after another and concurrent) are the same
// as when it runs alone, while any program of the hostile suites (every attack below
// testdata/hostile, found by hostilePrograms) runs beside it in the same pool and afterwards on the
// worker that program used, on every layer available here (under CI every layer must be). No file
// outside the sandbox may change. Programs run in parallel, each in a pool of its own; with -short,
// every fourth program on the layer under test only.
func TestInnocentTranscriptBesideAnyHostile(t *testing.T) {
	paths := hostilePrograms(t, hostileRoot)
	if len(paths) < 20 {
		t.Fatalf("%d hostile programs under %s, want >= 20", len(paths), hostileRoot)
	}
	layers := []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock}
	if testing.Short() {
		layers = []Isolation{isoUnderTest()}
		var subset []string
		for i, p := range paths {
			if i%4 == 0 {
				subset = append(subset, p)
			}
		}
		paths = subset
	}
	outside := t.TempDir()
	planted := filepath.Join(t.TempDir(), "planted.txt")
	if err := os.WriteFile(planted, []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	render := strings.NewReplacer("@PLANTED_FILE@", planted, "@OUTSIDE_DIR@", outside, "@PORT@", "9", "@SECRET_NAME@", "SPADE_TEST_NO_SUCH_SECRET")
	for _, iso := range layers {
		t.Run(string(iso), func(t *testing.T) {
			innocent := newInnocent(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			t.Cleanup(cancel) // the parallel subtests run after this function returns
			alone, err := transcriptBytes(ctx, newTestPool(t, iso, propertyOptions), innocent)
			if err != nil {
				t.Fatalf("innocent alone: %v", err)
			}
			for _, path := range paths {
				name, _ := filepath.Rel(hostileRoot, path)
				t.Run(strings.TrimSuffix(name, ".py"), func(t *testing.T) {
					t.Parallel()
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					p := newTestPool(t, iso, propertyOptions)
					var beside []byte
					var besideErr error
					done := make(chan struct{})
					go func() {
						defer close(done)
						beside, besideErr = transcriptBytes(ctx, p, innocent)
					}()
					playHostile(ctx, p, render.Replace(string(data)))
					<-done
					// twice at once: with both workers idle, one of the two runs on the worker the
					// hostile program used (or on its replacement where that worker was not reusable)
					var after [2][]byte
					var afterErr [2]error
					var wg sync.WaitGroup
					for i := range after {
						wg.Go(func() { after[i], afterErr[i] = transcriptBytes(ctx, p, innocent) })
					}
					wg.Wait()
					for _, run := range []struct {
						when string
						got  []byte
						err  error
					}{{"beside", beside, besideErr}, {"after", after[0], afterErr[0]}, {"after", after[1], afterErr[1]}} {
						if run.err != nil {
							t.Errorf("innocent %s %s: %v", run.when, name, run.err)
						} else if !bytes.Equal(run.got, alone) {
							t.Errorf("innocent %s %s:\n%s\nalone:\n%s", run.when, name, run.got, alone)
						}
					}
				})
			}
		})
		if entries, _ := os.ReadDir(outside); len(entries) > 0 {
			t.Errorf("a hostile program wrote outside on %s: %v", iso, entries)
		}
		if data, err := os.ReadFile(planted); err != nil || string(data) != "planted" {
			t.Errorf("the planted file changed on %s: %q %v", iso, data, err)
		}
	}
}
