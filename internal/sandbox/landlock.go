package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockArg0 marks a re-exec of this binary as the landlock init.
const landlockArg0 = "spade-sandbox-landlock"

// landlockSpec is what the parent tells the landlock init.
type landlockSpec struct {
	Argv     []string `json:"argv"`
	Env      []string `json:"env"`
	ReadDirs []string `json:"read_dirs"`
	Files    []string `json:"files"`
	WorkDir  string   `json:"work_dir"`
	SetUID   bool     `json:"setuid"`
}

// landlockExecArg0 marks the re-exec that confines itself and execs the harness.
const landlockExecArg0 = "spade-sandbox-landlock-exec"

func init() {
	if len(os.Args) == 2 && os.Args[0] == landlockExecArg0 {
		runtime.LockOSThread()
		err := runLandlockExec(os.Args[1])
		fmt.Fprintf(os.Stderr, "spade sandbox landlock exec: %v\n", err)
		os.Exit(111)
	}
	if len(os.Args) == 2 && os.Args[0] == landlockArg0 {
		runtime.LockOSThread()
		if err := runLandlockInit(os.Args[1]); err != nil {
			fmt.Fprintf(os.Stderr, "spade sandbox landlock init: %v\n", err)
			os.Exit(111)
		}
		os.Exit(0)
	}
}

// landlockCommand builds the re-exec of this binary that confines the harness with landlock
// (filesystem: read-only system directories, a private work directory; TCP bind/connect;
// signals and abstract sockets outside the sandbox on kernels with landlock ABI 6), a seccomp
// filter (no sockets but AF_UNIX, no namespaces, ptrace, mounts, bpf, keyrings, ...) and, on a
// root host, uid SandboxUID. There is no PID namespace: the init is a child subreaper and kills
// every descendant when asked to stop.
func landlockCommand(py *Python, workDir string, argv []string, attr *syscall.SysProcAttr) (*exec.Cmd, error) {
	spec := landlockSpec{Argv: argv, WorkDir: workDir, Files: systemFiles, SetUID: os.Getuid() == 0}
	for _, kv := range childEnv { // (the harness is exec'd with this list as is: no duplicates)
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TMPDIR=") {
			spec.Env = append(spec.Env, kv)
		}
	}
	spec.Env = append(spec.Env, "HOME="+workDir, "TMPDIR="+workDir)
	for _, dir := range systemDirs {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			spec.ReadDirs = append(spec.ReadDirs, dir)
		}
	}
	spec.ReadDirs = append(spec.ReadDirs, pythonDirs(py)...)
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: exe, Args: []string{landlockArg0, string(data)}, Env: []string{}, Dir: workDir}
	return cmd, nil
}

// landlockABI returns the kernel's landlock ABI version (0 when unavailable).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

const (
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
)

// applyLandlock confines the calling thread (and what it starts) to spec's paths.
func applyLandlock(spec landlockSpec) error {
	abi := landlockABI()
	if abi < 1 {
		return errors.New("landlock is not available (kernel without it, or disabled)")
	}
	handled := uint64(0x1fff) // ABI 1: execute .. make_sym
	if abi >= 2 {
		handled |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		handled |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	attr := unix.LandlockRulesetAttr{Access_fs: handled}
	size := uintptr(8)
	if abi >= 4 {
		attr.Access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size = 16
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = 24
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(path string, rights uint64) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // a path this host lacks needs no rule
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			rights &= fileRights
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: rights & handled, Parent_fd: int32(pfd)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("landlock_add_rule %s: %w", path, errno)
		}
		return nil
	}
	for _, dir := range spec.ReadDirs {
		if err := add(dir, readRights); err != nil {
			return err
		}
	}
	for _, f := range spec.Files {
		if err := add(f, readRights); err != nil {
			return err
		}
	}
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"} {
		if err := add(dev, unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE); err != nil {
			return err
		}
	}
	if err := add(spec.WorkDir, handled); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// deniedSyscalls fail with EPERM under the seccomp filter. Besides mounts, namespaces, modules
// and the like: every way one process reaches into another (ptrace, process_vm_*, pidfd_getfd,
// pidfd_open, kcmp, process_madvise) and every way to find or offer a socket by name (bind,
// connect, listen, accept: the sandbox's sockets are all socketpairs made by us, so no abstract or
// filesystem socket can couple two programs or two instances), and every System V IPC and POSIX
// message queue call.
var deniedSyscalls = []uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD, unix.SYS_PIDFD_OPEN,
	unix.SYS_KCMP, unix.SYS_PROCESS_MADVISE, unix.SYS_PROCESS_MRELEASE,
	unix.SYS_BIND, unix.SYS_CONNECT, unix.SYS_LISTEN, unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_MOUNT, unix.SYS_UMOUNT2,
	unix.SYS_PIVOT_ROOT, unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_KEXEC_LOAD, unix.SYS_BPF,
	unix.SYS_PERF_EVENT_OPEN, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_USERFAULTFD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_REBOOT, unix.SYS_SWAPON,
	unix.SYS_SWAPOFF, unix.SYS_CHROOT, unix.SYS_ACCT, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_FANOTIFY_INIT, unix.SYS_IO_URING_SETUP,
	// SysV IPC and POSIX message queues live in the worker's IPC namespace, which outlives a program and
	// is shared by its instances: no env needs them, and an object one made would couple episodes
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT, unix.SYS_MSGGET, unix.SYS_MSGSND,
	unix.SYS_MSGRCV, unix.SYS_MSGCTL, unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMCTL, unix.SYS_SEMTIMEDOP,
	unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE, unix.SYS_MQ_NOTIFY,
	unix.SYS_MQ_GETSETATTR,
}

// selfOnlySyscalls act on the process named by their argument (index, 0-based), which must be 0
// (the caller) under the seccomp filter: no process lowers another's rlimits (prlimit64),
// priority (setpriority's who) or scheduling.
var selfOnlySyscalls = []struct {
	nr  uintptr
	arg uint32
}{
	{unix.SYS_PRLIMIT64, 0}, {unix.SYS_SETPRIORITY, 1}, {unix.SYS_SCHED_SETAFFINITY, 0},
	{unix.SYS_SCHED_SETSCHEDULER, 0}, {unix.SYS_SCHED_SETPARAM, 0}, {unix.SYS_SCHED_SETATTR, 0},
	{unix.SYS_IOPRIO_SET, 1},
}

// seccompFilter builds the BPF program installed on every isolation layer: kill on a foreign
// architecture, EPERM for deniedSyscalls, for selfOnlySyscalls aimed at another process, for
// prctl(PR_SET_DUMPABLE, non-zero) (the harness makes every process non-dumpable) and for clone
// with namespace flags, ENOSYS for clone3 (libc falls back to clone), EACCES for sockets other
// than AF_UNIX, allow the rest.
func seccompFilter() ([]unix.SockFilter, error) {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return nil, fmt.Errorf("the seccomp filter is not built for %s", runtime.GOARCH)
	}
	const (
		ldw   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
	)
	errno := func(e syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	nsFlags := uint32(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	prog := []unix.SockFilter{
		{Code: ldw, K: 4}, // arch
		{Code: jeq, Jt: 1, Jf: 0, K: arch},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: ldw, K: 0}, // nr
	}
	for _, nr := range deniedSyscalls {
		prog = append(prog, unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: uint32(nr)}, unix.SockFilter{Code: ret, K: errno(unix.EPERM)})
	}
	for _, s := range selfOnlySyscalls {
		prog = append(prog,
			unix.SockFilter{Code: jeq, Jt: 0, Jf: 4, K: uint32(s.nr)},
			unix.SockFilter{Code: ldw, K: 16 + 8*s.arg}, // the argument's low half: a pid_t
			unix.SockFilter{Code: jeq, Jt: 1, Jf: 0, K: 0},
			unix.SockFilter{Code: ret, K: errno(unix.EPERM)},
			unix.SockFilter{Code: ret, K: allow},
		)
	}
	prog = append(prog,
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 6, K: unix.SYS_PRCTL},
		unix.SockFilter{Code: ldw, K: 16},
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 3, K: unix.PR_SET_DUMPABLE},
		unix.SockFilter{Code: ldw, K: 24},
		unix.SockFilter{Code: jeq, Jt: 1, Jf: 0, K: 0},
		unix.SockFilter{Code: ret, K: errno(unix.EPERM)},
		unix.SockFilter{Code: ret, K: allow},
	)
	prog = append(prog,
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: unix.SYS_CLONE3},
		unix.SockFilter{Code: ret, K: errno(unix.ENOSYS)},
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 4, K: unix.SYS_CLONE},
		unix.SockFilter{Code: ldw, K: 16}, // args[0], low half: the flags
		unix.SockFilter{Code: jset, Jt: 0, Jf: 1, K: nsFlags},
		unix.SockFilter{Code: ret, K: errno(unix.EPERM)},
		unix.SockFilter{Code: ret, K: allow},
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 4, K: unix.SYS_SOCKET},
		unix.SockFilter{Code: ldw, K: 16}, // args[0]: the domain
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: unix.AF_UNIX},
		unix.SockFilter{Code: ret, K: allow},
		unix.SockFilter{Code: ret, K: errno(unix.EACCES)},
		unix.SockFilter{Code: ret, K: allow},
	)
	return prog, nil
}

// seccompProgram returns the filter as the bytes of a struct sock_filter array (what bwrap's
// --seccomp reads).
func seccompProgram() ([]byte, error) {
	filter, err := seccompFilter()
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&filter[0])), len(filter)*int(unsafe.Sizeof(filter[0]))), nil
}

// applySeccomp installs the filter on the calling thread (inherited by what it starts).
func applySeccomp() error {
	filter, err := seccompFilter()
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// runLandlockExec confines its own (locked) thread with landlock and the seccomp filter and
// execs the harness: the confinement carries over to the interpreter.
func runLandlockExec(specJSON string) error {
	var spec landlockSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	if spec.SetUID {
		// (this binary may be readable by root only: the uid changes after the exec into it)
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setgid(SandboxUID); err != nil {
			return fmt.Errorf("setgid: %w", err)
		}
		if err := syscall.Setuid(SandboxUID); err != nil {
			return fmt.Errorf("setuid: %w", err)
		}
		// a change of uid clears the parent-death signal: set it again, and mind a parent already gone
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
			return fmt.Errorf("parent-death signal: %w", err)
		}
		if os.Getppid() == 1 {
			return errors.New("the landlock init is gone")
		}
	}
	if err := applyLandlock(spec); err != nil {
		return err
	}
	if err := applySeccomp(); err != nil {
		return err
	}
	return syscall.Exec(spec.Argv[0], spec.Argv, spec.Env)
}

// runLandlockInit starts the harness (confined by runLandlockExec) and waits; on SIGTERM, or
// when the harness exits, it kills every descendant (it is their subreaper).
func runLandlockInit(specJSON string) error {
	var spec landlockSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("subreaper: %w", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	go func() {
		<-stop
		shutdown(143)
	}()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// The harness starts through a re-exec that confines itself and then execs the interpreter:
	// this init stays unconfined, so it can always list /proc to kill every descendant (landlock
	// and seccomp confine a thread, and which thread runs a goroutine is not ours to choose).
	cmd := &exec.Cmd{Path: exe, Args: []string{landlockExecArg0, specJSON}}
	cmd.Env = spec.Env
	cmd.Dir = spec.WorkDir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(3, "requests"), os.NewFile(4, "replies"), os.NewFile(5, "fds")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", spec.Argv[0], err)
	}
	for fd := 3; fd <= 5; fd++ {
		unix.Close(fd)
	}
	go killDetached(cmd.Process.Pid)
	status := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			break
		}
		if pid == cmd.Process.Pid {
			status = ws.ExitStatus()
			break
		}
	}
	shutdown(status)
	return nil
}

// detachedSweep is how often killDetached looks for processes that left their program's tree.
const detachedSweep = 500 * time.Millisecond

// killDetached kills, every detachedSweep, each child of this init but the harness: a process that
// left its program's tree (a setsid daemon, the orphan of a double fork) is reparented to us, the
// subreaper, where neither its episode's CPU seconds nor its program's kill would find it. The
// harness does the same under bwrap and namespaces (kill_detached in harness.py), where it can read
// its init's children; here /proc is closed to it.
func killDetached(harness int) {
	for range time.Tick(detachedSweep) {
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, task := range tasks {
			data, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
			if err != nil {
				continue
			}
			for _, field := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(field); err == nil && pid != harness {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
	}
}

// shutdownMu makes the first shutdown the only one: the harness's exit and our SIGTERM may race.
var shutdownMu sync.Mutex

// shutdown kills every descendant, then exits with status. It kills from a goroutine of its own:
// the main goroutine's thread is confined by landlock (no /proc: it would see no descendant at
// all, and leave setsid daemons behind when the harness exits first, as it does when Go dies).
func shutdown(status int) {
	shutdownMu.Lock()
	done := make(chan struct{})
	go func() {
		killDescendants()
		close(done)
	}()
	<-done
	os.Exit(status)
}

// killDescendants stops, then kills, every process below this one (orphans reparent to us, a
// subreaper, so a setsid daemon is still a descendant), until none is left: a stopped process
// cannot fork, so a fork bomb cannot outpace the rounds.
func killDescendants() {
	self := os.Getpid()
	for round := 0; round < 100; round++ {
		parents := map[int]int{}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm may hold spaces and parentheses
			fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
			if len(fields) > 1 {
				if ppid, err := strconv.Atoi(fields[1]); err == nil {
					parents[pid] = ppid
				}
			}
		}
		var below []int
		for pid := range parents {
			for p, hops := parents[pid], 0; p > 1 && hops < 64; p, hops = parents[p], hops+1 {
				if p == self {
					below = append(below, pid)
					break
				}
			}
		}
		for _, pid := range below {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		for _, pid := range below {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		killed := len(below)
		for {
			if pid, _ := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
		if killed == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
