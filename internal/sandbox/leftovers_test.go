package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lingerer leaves, from its reset, a setsid daemon and a CPU burner behind (both marked, each in a
// session of its own and still the instance's child: an orphan would be killed by the layer's sweep of
// detached processes within half a second), and returns once both run.
func lingerer(marker string) string {
	return fmt.Sprintf(`import os, time

class Lingerer:
    def reset(self, seed):
        for script in ("sleep 600 # %[1]s-sleeper", "while :; do :; done # %[1]s-burner"):
            if os.fork() == 0:  # in a session of its own, out of reach of a process-group kill
                os.setsid()
                os.execv("/bin/sh", ["sh", "-c", script])
        time.sleep(0.2)
        return "lingering"

    def step(self, action):
        return "x", 0.0, True, {}
`, marker)
}

// process is one entry of /proc: its parent, state and command line.
type process struct {
	ppid  int
	state string
	cmd   string
}

// processTable reads /proc.
func processTable() map[int]process {
	table := map[int]process{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		table[pid] = process{ppid: ppid, state: fields[0], cmd: strings.ReplaceAll(string(cmd), "\x00", " ")}
	}
	return table
}

// descendants returns the live (not zombie) processes below root.
func descendants(root int) map[int]process {
	table := processTable()
	out := map[int]process{}
	for pid, p := range table {
		for q, hops := p.ppid, 0; q > 1 && hops < 64; q, hops = table[q].ppid, hops+1 {
			if q == root {
				if p.state != "Z" {
					out[pid] = p
				}
				break
			}
		}
	}
	return out
}

// alive returns which of procs still run the same command (a reused pid runs another).
func alive(procs map[int]process) []string {
	table := processTable()
	var left []string
	for pid, p := range procs {
		if now, ok := table[pid]; ok && now.state != "Z" && now.cmd == p.cmd {
			left = append(left, fmt.Sprintf("%d %s", pid, clipText(p.cmd)))
		}
	}
	return left
}

// waitGone waits up to 5 s for procs to end and fails with what is left.
func waitGone(t *testing.T, procs map[int]process, what string) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		left := alive(procs)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still running: %v", what, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func withMarker(procs map[int]process, marker string) int {
	n := 0
	for _, p := range procs {
		if strings.Contains(p.cmd, marker) {
			n++
		}
	}
	return n
}

// TestNoLeftoversAfterClose: a program that leaves a setsid daemon and a CPU burner behind, then
// Program.Close and Pool.Close: nothing the pool started keeps running, on every layer.
func TestNoLeftoversAfterClose(t *testing.T) {
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			p := newTestPool(t, iso, func(o *Options) { o.Workers = 1 })
			marker := fmt.Sprintf("spade-linger-%d", time.Now().UnixNano())
			ctx := context.Background()
			prog, err := p.Load(ctx, lingerer(marker))
			if err != nil {
				t.Fatal(err)
			}
			env, err := prog.NewEnv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := env.Reset(ctx, 0); err != nil {
				t.Fatal(err)
			}
			started := descendants(os.Getpid())
			if withMarker(started, marker) != 2 {
				t.Fatalf("the daemon and the burner did not both start (the test would prove nothing): %v", started)
			}
			prog.Close()
			lingering := map[int]process{}
			for pid, proc := range started {
				if strings.Contains(proc.cmd, marker) {
					lingering[pid] = proc
				}
			}
			waitGone(t, lingering, "after Program.Close") // the worker was cleaned or replaced
			play(t, p)
			all := descendants(os.Getpid())
			p.Close()
			waitGone(t, all, "after Pool.Close")
		})
	}
}

// TestHelperHoldPool is not a test: TestNoLeftoversAfterKill runs it in a child process, which
// holds a pool with a lingering program until it is killed.
func TestHelperHoldPool(t *testing.T) {
	iso, marker := os.Getenv("SPADE_TEST_HOLD_POOL"), os.Getenv("SPADE_TEST_HOLD_MARKER")
	if iso == "" {
		t.Skip("helper of TestNoLeftoversAfterKill")
	}
	p := newTestPool(t, Isolation(iso), nil)
	ctx := context.Background()
	prog, err := p.Load(ctx, lingerer(marker))
	if err != nil {
		t.Fatal(err)
	}
	env, err := prog.NewEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Reset(ctx, 0); err != nil {
		t.Fatal(err)
	}
	second, err := p.Load(ctx, counterEnv) // a second worker, idle in its template
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("READY")
	time.Sleep(time.Minute)
	// (held to the end: a Program or Env the collector finds unreachable has its sockets closed by
	// their finalizers, and its processes end before the kill this helper is there for)
	runtime.KeepAlive(prog)
	runtime.KeepAlive(env)
	runtime.KeepAlive(second)
}

// TestNoLeftoversAfterKill: kill -9 of a process that holds a pool (with a lingering program and
// a second program) leaves nothing the pool started running, on every layer.
func TestNoLeftoversAfterKill(t *testing.T) {
	for _, iso := range []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			marker := fmt.Sprintf("spade-killed-holder-%d", time.Now().UnixNano())
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldPool$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SPADE_TEST_HOLD_POOL="+string(iso), "SPADE_TEST_HOLD_MARKER="+marker)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			ready := make(chan bool, 1)
			go func() {
				scanner := bufio.NewScanner(out)
				for scanner.Scan() {
					if scanner.Text() == "READY" {
						ready <- true
					}
				}
				ready <- false
			}()
			select {
			case ok := <-ready:
				if !ok {
					t.Fatal("the helper ended before it was ready")
				}
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the helper was not ready within 60 s")
			}
			held := descendants(cmd.Process.Pid)
			if withMarker(held, marker) != 2 {
				cmd.Process.Kill()
				t.Fatalf("the daemon and the burner did not both start: %v", held)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitGone(t, held, "after kill -9 of the pool's holder")
			// The killed holder could not remove its workers' directories; the next process to make one
			// does (layers without a private /tmp have them: landlock).
			dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-*", workDirPrefix, cmd.Process.Pid)))
			if iso == IsolationLandlock && len(dirs) == 0 {
				t.Fatal("the killed holder's worker left no directory: the sweep below proves nothing")
			}
			cmd.Wait() // reaped: a zombie's pid still exists
			removeStaleWorkDirs(os.TempDir())
			if left, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-*", workDirPrefix, cmd.Process.Pid))); len(left) > 0 {
				t.Fatalf("worker directories of the killed holder left after the sweep: %v", left)
			}
		})
	}
}
