package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Isolation names an isolation layer.
type Isolation string

// The isolation layers, strongest first. Auto picks the first whose probe succeeds.
const (
	// IsolationAuto probes bwrap, then the namespace init, then landlock, and refuses when none works.
	IsolationAuto Isolation = "auto"
	// IsolationBwrap runs each worker under bubblewrap: new user, pid, net, ipc, uts, mount and
	// cgroup namespaces, a minimal read-only view of the system, tmpfs /tmp, a fresh /proc, uid 65534.
	IsolationBwrap Isolation = "bwrap"
	// IsolationNamespaces runs each worker under this binary's own init (re-exec) in new user,
	// pid, net, ipc, uts and mount namespaces, with the same filesystem view as bwrap.
	IsolationNamespaces Isolation = "namespaces"
	// IsolationLandlock confines each worker with landlock, a seccomp filter, rlimits and (as
	// root) uid 65534, for hosts without user namespaces. It has no PID or network namespace:
	// network is cut by seccomp (no sockets but AF_UNIX) and landlock, /proc by landlock.
	IsolationLandlock Isolation = "landlock"
	// IsolationNone runs workers with rlimits, a scrubbed environment and (as root) uid 65534
	// only. It needs Options.AllowUnsafe (the CLI's --unsafe-no-isolation).
	IsolationNone Isolation = "none"
)

// SandboxUID is the unprivileged uid (and gid) generated code runs as, inside and, when this
// process is root, outside the sandbox too: a user namespace alone would map it to root on
// the host, and root ignores file permissions and RLIMIT_NPROC.
const SandboxUID = 65534

// childEnv is the whole environment of a worker: nothing of the parent's reaches it.
var childEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=/tmp",
	"TMPDIR=/tmp",
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
	"PYTHONHASHSEED=0",
	"PYTHONDONTWRITEBYTECODE=1",
	"PYTHONIOENCODING=utf-8",
	"PYTHONNOUSERSITE=1",
	"OPENBLAS_NUM_THREADS=1",
	"OMP_NUM_THREADS=1",
	"MKL_NUM_THREADS=1",
}

// hiddenDirs are covered by an empty tmpfs in the namespace layer, where the root is the
// host's root remounted read-only.
var hiddenDirs = []string{"/tmp", "/var/tmp", "/home", "/root", "/run", "/mnt", "/media", "/srv", "/opt", "/work", "/dev/shm"}

// systemDirs are what the bwrap layer shows of the host (read-only); everything else is absent.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemFiles are the few files under /etc the dynamic linker and numpy need.
var systemFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime"}

// layers are the isolation layers in the order auto tries them.
var layers = []Isolation{IsolationBwrap, IsolationNamespaces, IsolationLandlock}

// bwrapPath returns the bubblewrap executable, or "" when it is not installed.
func bwrapPath() string {
	if p, err := exec.LookPath("bwrap"); err == nil {
		return p
	}
	return ""
}

// bwrapSeccompFD is the descriptor on which bwrap reads the seccomp program (ExtraFiles[3]).
const bwrapSeccompFD = 6

// bwrapArgs builds the bwrap command line that runs argv inside the sandbox: the seccomp
// program on fd bwrapSeccompFD, /dev read-only (no writable /dev/shm).
func bwrapArgs(py *Python, tmpfsBytes int64, argv []string) []string {
	args := []string{
		"--seccomp", strconv.Itoa(bwrapSeccompFD),
		"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv",
		"--uid", strconv.Itoa(SandboxUID), "--gid", strconv.Itoa(SandboxUID),
		"--disable-userns", "--cap-drop", "ALL",
	}
	for _, kv := range childEnv {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	for _, dir := range systemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(dir)
			if err == nil {
				args = append(args, "--symlink", target, dir)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", dir, dir)
		}
	}
	for _, f := range systemFiles {
		args = append(args, "--ro-bind-try", f, f)
	}
	for _, dir := range pythonDirs(py) {
		args = append(args, "--ro-bind", dir, dir)
	}
	args = append(args,
		"--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
		"--size", strconv.FormatInt(tmpfsBytes, 10), "--tmpfs", "/tmp",
		"--chdir", "/tmp", "--")
	return append(args, argv...)
}

// pythonDirs lists the interpreter directories that the system view does not already show.
func pythonDirs(py *Python) []string {
	var dirs []string
	candidates := append([]string{filepath.Dir(py.Executable)}, py.Prefixes...)
	for _, dir := range candidates {
		covered := false
		for _, sys := range systemDirs {
			if dir == sys || strings.HasPrefix(dir, sys+"/") {
				covered = true
			}
		}
		if !covered && !contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// hostCredential makes a root host run the sandbox as SandboxUID; other users stay themselves.
func hostCredential(attr *syscall.SysProcAttr) {
	if os.Geteuid() == 0 {
		attr.Credential = &syscall.Credential{Uid: SandboxUID, Gid: SandboxUID, Groups: []uint32{}}
	}
}

// Probe describes what an isolation layer's probe found.
type Probe struct {
	// Isolation is the layer probed.
	Isolation Isolation
	// OK is true when a worker started under it and answered.
	OK bool
	// Detail says what was found (the bwrap path, or why the probe failed).
	Detail string
	// Took is how long the probe's worker start took.
	Took time.Duration
	// Modules are the modules the worker preloaded.
	Modules []string
}

// ProbeIsolation starts one worker under each layer (auto: bwrap then namespaces) and reports
// which ones work. It is what `spade doctor` prints.
func ProbeIsolation(ctx context.Context, pythonName string) ([]Probe, *Python, error) {
	py, err := ResolvePython(ctx, pythonName)
	if err != nil {
		return nil, nil, err
	}
	var probes []Probe
	for _, iso := range layers {
		probes = append(probes, probeOne(ctx, py, iso))
	}
	return probes, py, nil
}

func probeOne(ctx context.Context, py *Python, iso Isolation) Probe {
	pr := Probe{Isolation: iso}
	if iso == IsolationBwrap {
		path := bwrapPath()
		if path == "" {
			pr.Detail = "bwrap not found on PATH (apt-get install -y bubblewrap)"
			return pr
		}
		pr.Detail = path
	}
	opts := Options{Isolation: iso, PythonExe: py}
	opts.fill()
	start := time.Now()
	w, err := startWorker(ctx, &opts, iso)
	pr.Took = time.Since(start)
	if err != nil {
		pr.Detail = strings.TrimSpace(pr.Detail + " " + err.Error())
		return pr
	}
	defer w.kill()
	if w.hello.UID != SandboxUID {
		pr.Detail = fmt.Sprintf("worker runs as uid %d, want %d", w.hello.UID, SandboxUID)
		return pr
	}
	pr.OK = true
	pr.Modules = w.hello.Modules
	if iso == IsolationBwrap {
		pr.Detail += ": "
	}
	if iso == IsolationLandlock {
		pr.Detail = fmt.Sprintf("landlock ABI %d (filesystem, TCP%s), seccomp filter, rlimits, uid 65534; no PID namespace", landlockABI(), map[bool]string{true: ", signals", false: ""}[landlockABI() >= 6])
	} else {
		pr.Detail += "user, pid, net, ipc, uts and mount namespaces; read-only system view, tmpfs /tmp; seccomp filter; uid 65534"
	}
	return pr
}
