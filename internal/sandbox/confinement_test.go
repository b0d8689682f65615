package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/testenv"
)

// syscallProbe reports, as JSON in its first observation, what each way of reaching another
// process, finding a socket by name or leaving the sandbox's limits gives (0: allowed, else errno).
const syscallProbe = `
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def errno_of(result):
    return 0 if result >= 0 else ctypes.get_errno()

class Probe:
    def reset(self, seed):
        other = os.getppid()  # the template: another process of the same uid
        old = ctypes.create_string_buffer(16)
        out = {
            "pidfd_open": errno_of(libc.syscall(434, other, 0)),
            "pidfd_getfd": errno_of(libc.syscall(438, -1, 3, 0)),
            "ptrace_attach": errno_of(libc.syscall(101, 16, other, 0, 0)),
            "process_vm_readv": errno_of(libc.syscall(310, other, 0, 0, 0, 0, 0)),
            "prlimit_other": errno_of(libc.syscall(302, other, 7, None, old)),
            "prlimit_self": errno_of(libc.syscall(302, 0, 7, None, old)),
            "setpriority_other": errno_of(libc.syscall(141, 0, other, 10)),
            "set_dumpable": errno_of(libc.prctl(4, 1, 0, 0, 0)),
            "dumpable": libc.prctl(3, 0, 0, 0, 0),
            "unshare_user": errno_of(libc.unshare(0x10000000)),
            "signal_template": errno_of(libc.kill(other, 0)),
        }
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            s.bind("\0spade-probe")
            out["bind_abstract"] = 0
        except OSError as e:
            out["bind_abstract"] = e.errno
        try:
            s.connect("\0spade-probe-missing")
            out["connect_abstract"] = 0
        except OSError as e:
            out["connect_abstract"] = e.errno
        try:
            open("/dev/shm/spade-probe", "w").close()
            out["write_dev_shm"] = 0
        except OSError as e:
            out["write_dev_shm"] = e.errno
        return json.dumps(out)

    def step(self, action):
        return "x", 0.0, True, {}
`

// TestSeccompEveryLayer: on every layer, the seccomp filter (and the harness's non-dumpable flag)
// deny every way one process of the sandbox reaches another, names a socket or leaves its limits,
// and /dev has nothing writable.
func TestSeccompEveryLayer(t *testing.T) {
	testenv.Require(t, runtime.GOARCH == "amd64", "the seccomp probe calls system calls by their x86-64 numbers: run it on amd64")
	const eperm = 1
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			p := newTestPool(t, iso, nil)
			obs, err := playOnce(context.Background(), p, syscallProbe)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]int
			if err := json.Unmarshal([]byte(obs), &got); err != nil {
				t.Fatalf("%q: %v", obs, err)
			}
			for _, name := range []string{"pidfd_open", "pidfd_getfd", "ptrace_attach", "process_vm_readv", "prlimit_other",
				"setpriority_other", "set_dumpable", "unshare_user", "bind_abstract", "connect_abstract"} {
				if got[name] != eperm {
					t.Errorf("%s: errno %d, want EPERM", name, got[name])
				}
			}
			if got["prlimit_self"] != 0 || got["dumpable"] != 0 {
				t.Errorf("prlimit on itself %d (want allowed), dumpable %d (want 0)", got["prlimit_self"], got["dumpable"])
			}
			if got["write_dev_shm"] == 0 {
				t.Errorf("/dev/shm is writable")
			}
			// an instance's landlock domain keeps its signals in (ABI >= 6): not even its template
			if landlockABI() >= 6 && got["signal_template"] != eperm {
				t.Errorf("kill(template, 0): errno %d, want EPERM (landlock ABI %d)", got["signal_template"], landlockABI())
			}
		})
	}
}

const scratchProbe = `
import json, os

class Scratch:
    def reset(self, seed):
        with open("mine.txt", "w") as f:
            f.write(str(seed))
        return json.dumps({"cwd": os.getcwd(), "files": sorted(os.listdir("."))})

    def step(self, action):
        try:
            with open(action) as f:
                return "read " + f.read(), 0.0, True, {}
        except OSError as e:
            return "denied %d" % e.errno, 0.0, True, {}
`

// TestPrivateScratch: each instance starts in its own empty directory that no sibling can read,
// and the directory is gone when the instance ends.
func TestPrivateScratch(t *testing.T) {
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			p := newTestPool(t, iso, nil)
			ctx := context.Background()
			prog, err := p.Load(ctx, scratchProbe)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			type scratch struct {
				Cwd   string
				Files []string
			}
			var envs []*Env
			var dirs []scratch
			for seed := int64(1); seed <= 2; seed++ {
				env, err := prog.NewEnv(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer env.Close()
				obs, err := env.Reset(ctx, seed)
				if err != nil {
					t.Fatal(err)
				}
				var s scratch
				if err := json.Unmarshal([]byte(obs), &s); err != nil {
					t.Fatal(err)
				}
				if len(s.Files) != 1 || s.Files[0] != "mine.txt" {
					t.Fatalf("instance %d sees %v in its scratch directory, want only its own file", seed, s.Files)
				}
				envs, dirs = append(envs, env), append(dirs, s)
			}
			if dirs[0].Cwd == dirs[1].Cwd {
				t.Fatalf("two instances share %s", dirs[0].Cwd)
			}
			r, err := envs[1].Step(ctx, dirs[0].Cwd+"/mine.txt")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.Observation, "denied") {
				t.Fatalf("an instance read its sibling's file: %q", r.Observation)
			}
			if iso == IsolationLandlock { // the scratch space is on the host's file system: look
				if _, err := os.Stat(dirs[0].Cwd); err != nil {
					t.Fatalf("scratch directory of a live instance: %v", err)
				}
				envs[0].Close()
				// (an instance may not remove its directory, only empty it: the directory goes with
				// the program's, which the worker's end or clean removes)
				deadline := time.Now().Add(settle)
				for entries, _ := os.ReadDir(dirs[0].Cwd); len(entries) > 0; entries, _ = os.ReadDir(dirs[0].Cwd) {
					if time.Now().After(deadline) {
						t.Fatalf("%s still holds %v after its instance ended", dirs[0].Cwd, entries)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
}
