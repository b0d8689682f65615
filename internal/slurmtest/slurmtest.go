// Package slurmtest starts a real one-node Slurm cluster for a test: munged with a generated key, one
// slurmctld and one slurmd on loopback, everything (configuration, state, spool, logs, the munge socket)
// under the test's temporary directory, stopped when the test ends. It needs Debian's slurm-wlm and munge
// packages (scripts/deps.sh installs them) and root, as slurmd does; where either is missing the test is
// skipped, and fails under CI (internal/testenv).
package slurmtest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/testenv"
)

// Cluster is a running one-node Slurm.
type Cluster struct {
	// Conf is the slurm.conf path: every Slurm client command must see it as SLURM_CONF (Env).
	Conf string
	// Dir is the cluster's directory (state, spool, logs).
	Dir string
	// Node and Partition name the node and its one partition (the default partition).
	Node, Partition string
	// CPUs is the node's CPU count.
	CPUs int
}

// Env returns the environment entries a Slurm client (sbatch, squeue, scancel, sacct) needs to reach the
// cluster; append them to a child process's environment.
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.Conf} }

// Start starts the cluster and waits until its node is idle; the daemons are stopped (and the test's
// jobs with them) by t.Cleanup. The node has the machine's real CPU count and memory (slurmd -C), its
// partition lets jobs share CPUs by core (CR_Core), and jobs run as root.
func Start(t testing.TB) *Cluster {
	t.Helper()
	for _, prog := range []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"} {
		if _, err := exec.LookPath(prog); err != nil {
			testenv.SkipUnlessCI(t, "no %s on PATH: install Debian's slurm-wlm and munge (scripts/deps.sh)", prog)
		}
	}
	if os.Geteuid() != 0 {
		testenv.SkipUnlessCI(t, "slurmd runs jobs as root here: run the Slurm tests as root")
	}
	dir, err := os.MkdirTemp("", "slurmtest-")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: munged refuses a socket path longer than a Unix socket name allows, and a test's
	// temporary directory carries the test's name.
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, sub := range []string{"munge", "state", "spool", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cluster{Conf: filepath.Join(dir, "slurm.conf"), Dir: dir, Partition: "test"}
	socket := filepath.Join(dir, "munge", "munge.socket")
	startMunge(t, dir, socket)

	node, cpus := nodeLine(t)
	c.CPUs = cpus
	c.Node = strings.TrimPrefix(strings.Fields(node)[0], "NodeName=")
	ctldPort, slurmdPort := freePort(t), freePort(t)
	conf := fmt.Sprintf(`ClusterName=spadetest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/log/slurmctld.log
SlurmdLogFile=%[5]s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=defer_batch,sched_min_interval=0
MinJobAge=600
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
%[6]s NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=%[7]s Nodes=%[1]s Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
`, c.Node, ctldPort, slurmdPort, socket, dir, node, c.Partition)
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), c.Env()...)
	daemon(t, env, filepath.Join(dir, "slurmctld.pid"), "slurmctld", "-D", "-i", "-f", c.Conf)
	daemon(t, env, filepath.Join(dir, "slurmd.pid"), "slurmd", "-D", "-f", c.Conf, "-N", c.Node)
	c.waitIdle(t, 60*time.Second)
	// Runs before the daemons stop (cleanups run last first): the test's jobs end with the test.
	t.Cleanup(func() {
		c.Command("scancel", "--partition", c.Partition).Run()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			out, err := c.Command("squeue", "--noheader", "-o", "%i").Output()
			if err != nil || strings.TrimSpace(string(out)) == "" {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	return c
}

// Command returns a Slurm client command (squeue, scancel, ...) aimed at the cluster.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	return cmd
}

// Log returns the controller's and the node daemon's logs, for a failing test's message.
func (c *Cluster) Log() string {
	var b strings.Builder
	for _, name := range []string{"slurmctld.log", "slurmd.log"} {
		body, _ := os.ReadFile(filepath.Join(c.Dir, "log", name))
		fmt.Fprintf(&b, "--- %s (tail)\n%s\n", name, tailLines(string(body), 30))
	}
	return b.String()
}

// waitIdle polls sinfo until the node reports idle.
func (c *Cluster) waitIdle(t testing.TB, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		out, err := c.Command("sinfo", "--noheader", "--nodes", c.Node, "-o", "%T").CombinedOutput()
		last = strings.TrimSpace(string(out))
		if err == nil && strings.HasPrefix(last, "idle") {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("slurmtest: node %s not idle after %s (sinfo: %q)\n%s", c.Node, limit, last, c.Log())
}

// startMunge starts munged with a fresh key under dir, listening on socket, and stops it on cleanup.
func startMunge(t testing.TB, dir, socket string) {
	t.Helper()
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "munge", "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	pid := filepath.Join(dir, "munge", "munged.pid")
	daemon(t, os.Environ(), pid, "munged", "--foreground", "--force", "--socket="+socket, "--key-file="+keyFile,
		"--pid-file="+pid, "--log-file="+filepath.Join(dir, "log", "munged.log"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed"))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(socket); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("slurmtest: munged did not create %s", socket)
}

// daemon starts a daemon in the foreground of its own process group and, on cleanup, stops it with
// SIGTERM (SIGKILL after 10 seconds) and waits for it.
func daemon(t testing.TB, env []string, pidFile, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("slurmtest: start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		os.Remove(pidFile)
	})
	select {
	case <-done:
		t.Fatalf("slurmtest: %s exited at once: %v\n%s", name, cmd.ProcessState, out.String())
	case <-time.After(300 * time.Millisecond):
	}
}

// nodeLine returns the node's NodeName line as slurmd -C reports the machine (CPUs, sockets, cores,
// threads, memory), without its uptime, and the CPU count.
func nodeLine(t testing.TB) (string, int) {
	t.Helper()
	out, err := exec.Command("slurmd", "-C").Output()
	if err != nil {
		t.Fatalf("slurmtest: slurmd -C: %v", err)
	}
	line := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	cpus := 0
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "CPUs="); ok {
			fmt.Sscan(v, &cpus)
		}
	}
	if !strings.HasPrefix(line, "NodeName=") || cpus == 0 {
		t.Fatalf("slurmtest: unexpected slurmd -C output %q", out)
	}
	return line, cpus
}

// freePort returns a TCP port of loopback that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
