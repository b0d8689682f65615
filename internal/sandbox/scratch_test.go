package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// scratchFill writes into its scratch directory as its action says: "fill" one file until the file
// system refuses (RLIMIT_FSIZE), "hook" four files of 4 MiB (the limit, not past it) and then tries
// a fifth, "many N" N files of 6 MiB swallowing every error (so only the
// check after the call catches it), "write N" one file of N bytes. Each reply says what it sees.
const scratchFill = `
import json, os

class Fill:
    def reset(self, seed):
        return self.look()

    def look(self):
        st = os.statvfs(".")
        return json.dumps({"cwd": os.getcwd(), "files": sorted(os.listdir(".")),
                           "fs_used": (st.f_blocks - st.f_bfree) * st.f_frsize})

    def step(self, action):
        kind, _, n = action.partition(" ")
        if kind == "fill":
            with open("big.bin", "wb") as f:
                while True:
                    f.write(b"x" * (1 << 20))
                    f.flush()
        if kind == "many":
            for i in range(int(n)):
                try:
                    with open("part%d.bin" % i, "wb") as f:
                        f.write(b"y" * (6 << 20))
                except Exception:
                    pass
        if kind == "hook":
            for i in range(4):
                with open("q%d.bin" % i, "wb") as f:
                    f.write(b"q" * (4 << 20))
            try:
                open("q4.bin", "wb").close()
                return "opened", 0.0, False, {}
            except Exception as e:
                return "refused " + type(e).__name__, 0.0, False, {}
        if kind == "write":
            with open("own.bin", "wb") as f:
                f.write(b"z" * int(n))
        return self.look(), 0.0, False, {}
`

type scratchView struct {
	Cwd    string
	Files  []string
	FsUsed int64 `json:"fs_used"`
}

// TestScratchLimitPerInstance: on every layer, an instance that fills its scratch directory up to
// Options.ScratchBytes (one file past RLIMIT_FSIZE, or several files with the errors swallowed) gets
// a KindOutput error and its directory emptied, while a sibling instance of the same program goes
// on writing its own files; the worker is not tainted, and every directory is empty at the end.
func TestScratchLimitPerInstance(t *testing.T) {
	const limit = 16 << 20
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			p := newTestPool(t, iso, func(o *Options) { o.LoadTimeout, o.StepTimeout = 10*time.Second, 10*time.Second })
			if p.opts.ScratchBytes != limit {
				t.Fatalf("default ScratchBytes %d, want %d", p.opts.ScratchBytes, limit)
			}
			ctx := context.Background()
			prog, err := p.Load(ctx, scratchFill)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			view := func(obs string) scratchView {
				t.Helper()
				var v scratchView
				if err := json.Unmarshal([]byte(obs), &v); err != nil {
					t.Fatalf("%q: %v", obs, err)
				}
				return v
			}
			start := func() (*Env, scratchView) {
				t.Helper()
				env, err := prog.NewEnv(ctx)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { env.Close() })
				obs, err := env.Reset(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				return env, view(obs)
			}
			a, aDir := start()
			b, bDir := start()
			if r, err := b.Step(ctx, "write 8388608"); err != nil || len(view(r.Observation).Files) != 1 {
				t.Fatalf("sibling's 8 MiB: %v %q", err, r.Observation)
			}
			_, err = a.Step(ctx, "fill")
			if !errors.Is(err, ErrOutput) || !strings.Contains(err.Error(), "ScratchBytes") {
				t.Fatalf("filling the scratch directory: %v, want a KindOutput error naming ScratchBytes", err)
			}
			t.Logf("fill: %v", err)
			r, err := b.Step(ctx, "write 12582912")
			if err != nil {
				t.Fatalf("the sibling of an instance that filled its scratch directory cannot write: %v", err)
			}
			if v := view(r.Observation); len(v.Files) != 1 || v.Files[0] != "own.bin" {
				t.Fatalf("sibling sees %v", v.Files)
			}
			c, cDir := start()
			if _, err := c.Step(ctx, "many 4"); !errors.Is(err, ErrOutput) {
				t.Fatalf("files of 6 MiB past the limit, errors swallowed: %v, want a KindOutput error", err)
			} else {
				t.Logf("many: %v", err)
			}
			e, eDir := start()
			if r, err := e.Step(ctx, "hook"); err != nil || r.Observation != "refused ScratchFull" {
				t.Fatalf("a new file in a full scratch directory: %v %q, want it refused", err, r.Observation)
			}
			e.Close()
			if _, err := b.Step(ctx, "write 4096"); err != nil {
				t.Fatalf("sibling after the second overflow: %v", err)
			}
			b.Close()
			if prog.Tainted() {
				t.Fatal("an instance over its scratch limit tainted the worker")
			}
			d, dDir := start()
			if iso == IsolationLandlock { // the scratch space is on the host's file system: look
				for _, dir := range []string{aDir.Cwd, bDir.Cwd, cDir.Cwd, eDir.Cwd} {
					deadline := time.Now().Add(settle)
					for entries, _ := os.ReadDir(dir); len(entries) > 0; entries, _ = os.ReadDir(dir) {
						if time.Now().After(deadline) {
							t.Fatalf("%s still holds %v", dir, entries)
						}
						time.Sleep(20 * time.Millisecond)
					}
				}
			} else { // the worker's /tmp holds what every instance left (b and e empty their own as they end)
				deadline := time.Now().Add(settle)
				for used := dDir.FsUsed; used >= 1<<20; {
					if time.Now().After(deadline) {
						t.Fatalf("the worker's /tmp still holds %d bytes after the instances ended", used)
					}
					time.Sleep(20 * time.Millisecond)
					r, err := d.Step(ctx, "look")
					if err != nil {
						t.Fatal(err)
					}
					used = view(r.Observation).FsUsed
				}
			}
		})
	}
}

// TestWorkerReusedAfterACleanProgram: on the layers with a PID namespace of their own, a worker whose
// program closed cleanly (it wrote into its scratch directory, which the server then wipes and removes)
// serves the next program; the next program's instances start with an empty scratch directory. A clean
// that left the emptied directory behind would call the worker unclean and give every program a new
// worker, which halves the gate's throughput.
func TestWorkerReusedAfterACleanProgram(t *testing.T) {
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces} {
		t.Run(string(iso), func(t *testing.T) {
			p := newTestPool(t, iso, func(o *Options) { o.Workers = 1 })
			ctx := context.Background()
			var first *worker
			for i := 0; i < 3; i++ {
				prog, err := p.Load(ctx, scratchFill)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = prog.w
				} else if prog.w != first {
					t.Fatalf("program %d got a new worker: the previous one was not proved clean", i)
				}
				env, err := prog.NewEnv(ctx)
				if err != nil {
					t.Fatal(err)
				}
				obs, err := env.Reset(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				var seen scratchView
				if err := json.Unmarshal([]byte(obs), &seen); err != nil {
					t.Fatal(err)
				}
				if len(seen.Files) != 0 {
					t.Fatalf("program %d found %v in its fresh scratch directory", i, seen.Files)
				}
				if _, err := env.Step(ctx, "write 4096"); err != nil {
					t.Fatal(err)
				}
				prog.Close()
			}
		})
	}
}
