package sandbox

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

//go:embed harness.py
var harnessSource string

// HarnessSource returns the embedded Python harness (for `spade doctor` and tests).
func HarnessSource() string { return harnessSource }

// hello is the first line a worker sends.
type hello struct {
	Hello      int      `json:"hello"`
	Python     string   `json:"python"`
	Executable string   `json:"executable"`
	Modules    []string `json:"modules"`
	UID        int      `json:"uid"`
	PID        int      `json:"pid"`
}

// reply is any line a worker sends; fields are filled per op.
type reply struct {
	ID     int64   `json:"id"`
	OK     bool    `json:"ok"`
	Kind   Kind    `json:"kind"`
	Error  string  `json:"error"`
	Trace  string  `json:"trace"`
	Out    string  `json:"out"`
	Obs    string  `json:"obs"`
	Reward float64 `json:"reward"`
	Done   bool    `json:"done"`
	// Terminated and Truncated are Gymnasium's flags of a step (a 4-tuple's done is Terminated).
	Terminated bool `json:"terminated"`
	Truncated  bool `json:"truncated"`
	// Shape is the step's return shape (StepShape).
	Shape    StepShape       `json:"shape"`
	Info     json.RawMessage `json:"info"`
	Tools    json.RawMessage `json:"tools"`
	Value    json.RawMessage `json:"value"`
	Problems []string        `json:"problems"`
	Class    string          `json:"class"`
	HasTools bool            `json:"has_tools"`
	// StaticSeconds is the static check's time in a template that ran it (Pool.LoadChecked).
	StaticSeconds float64 `json:"static_seconds"`
	Seq           int64   `json:"seq"`
	Overflow      bool    `json:"overflow"`
	OutTotal      int64   `json:"out_total"`
	Status        string  `json:"status"`
	Killed        bool    `json:"killed"`
	PID           int     `json:"pid"`
	hello
}

// worker is one sandbox running the harness.
type worker struct {
	opts     *Options
	iso      Isolation
	cmd      *exec.Cmd
	requests *os.File // our end of fd 3
	replies  *os.File // our end of fd 4
	fds      *os.File // our end of fd 5 (SOCK_SEQPACKET): sockets for new children
	hello    hello
	stderr   *cappedBuffer
	workDir  string

	writeMu sync.Mutex
	mu      sync.Mutex
	pending map[int64]chan reply
	nextID  atomic.Int64
	nextEnv atomic.Int64

	dead     chan struct{}
	deadErr  error
	deadOnce sync.Once
	waited   chan struct{}
	tainted  atomic.Bool
	// peakMemory is the most memory (bytes) the worker's processes were seen to hold together
	// (checkMemory).
	peakMemory atomic.Int64
	// memoryReadAt is when checkMemory last read the worker's processes (Unix nanoseconds).
	memoryReadAt atomic.Int64
	// spent is set once a program was loaded, and cleared when the server proved the worker
	// clean after it: a spent worker is killed when released, never reused.
	spent atomic.Bool
}

// harnessConfig is the JSON the harness reads from argv[1].
func harnessConfig(o *Options, iso Isolation) string {
	nproc := o.Processes
	if iso == IsolationLandlock || iso == IsolationNone {
		// Without a user namespace of its own, RLIMIT_NPROC counts every process of the uid on
		// the host (other sandboxes' too): the budget is on top of what runs now.
		uid := os.Getuid()
		if uid == 0 {
			uid = SandboxUID
		}
		nproc = processesOf(uid) + o.Processes*o.Workers
	}
	cfg := map[string]any{
		"obs_cap": o.ObservationCap, "out_cap": o.OutputCap, "address_space": o.AddressSpace,
		"cpu_seconds": o.CPUSeconds, "child_nofile": o.OpenFiles, "fsize": o.FileSize,
		"scratch_bytes": o.ScratchBytes, "nproc": nproc, "preload": o.Preload, "harden": !o.unhardened, "seal": !o.unsealed, "sweep": iso == IsolationBwrap || iso == IsolationNamespaces,
		"max_turns": o.MaxTurns, "own_max_turns": o.OwnMaxTurns, "inject": o.Inject, "repair_fstrings": o.RepairFStrings, "info_cap": cmp.Or(o.harnessInfoCap, o.InfoCap),
	}
	data, _ := json.Marshal(cfg)
	return string(data)
}

// startWorker starts one sandbox under iso and waits for its hello.
func startWorker(ctx context.Context, o *Options, iso Isolation) (*worker, error) {
	py := o.PythonExe
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	fdPair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		reqR.Close()
		reqW.Close()
		repR.Close()
		repW.Close()
		return nil, err
	}
	fdsOurs, fdsTheirs := os.NewFile(uintptr(fdPair[0]), "fds"), os.NewFile(uintptr(fdPair[1]), "fds-worker")
	argv := []string{py.Executable, "-s", "-B", "-c", harnessSource, harnessConfig(o, iso)}
	w := &worker{
		opts: o, iso: iso, requests: reqW, replies: repR, fds: fdsOurs,
		stderr: &cappedBuffer{limit: 16 << 10}, pending: map[int64]chan reply{},
		dead: make(chan struct{}), waited: make(chan struct{}),
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var cmd *exec.Cmd
	var extra []*os.File
	switch iso {
	case IsolationBwrap:
		path := bwrapPath()
		if path == "" {
			return nil, errors.New("bwrap not found on PATH (apt-get install -y bubblewrap)")
		}
		filter, err := seccompPipe()
		if err != nil {
			return nil, err
		}
		defer filter.Close()
		extra = append(extra, filter)
		cmd = exec.Command(path, bwrapArgs(py, o.TmpBytes, argv)...)
		cmd.Env = []string{}
		hostCredential(attr)
		// No parent-death signal from us: bwrap 0.8's sandbox child blocks, before it sets its own
		// (--die-with-parent), until the outer bwrap has written its uid map; an outer bwrap that
		// our death killed in that window left that child blocked for good (a PID-namespace init
		// seen running 20 minutes after its worker). The outer bwrap sets its own parent-death
		// signal (--die-with-parent) right before it lets the child go; if we die before that, it
		// finishes the start, and the harness exits on the end of its request pipe.
		attr.Pdeathsig = 0
	case IsolationNamespaces:
		cmd, err = namespaceCommand(py, o, argv, attr)
		if err != nil {
			return nil, err
		}
	case IsolationLandlock:
		dir, err := sandboxWorkDir()
		if err != nil {
			return nil, err
		}
		w.workDir = dir
		// SIGTERM, not SIGKILL, when we die: the init (a subreaper) then kills every descendant,
		// setsid daemons included, before it exits
		attr.Pdeathsig = syscall.SIGTERM
		cmd, err = landlockCommand(py, dir, argv, attr)
		if err != nil {
			return nil, err
		}
	case IsolationNone:
		dir, err := sandboxWorkDir()
		if err != nil {
			return nil, err
		}
		w.workDir = dir
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(append([]string{}, childEnv...), "HOME="+dir, "TMPDIR="+dir)
		cmd.Dir = dir
		hostCredential(attr)
	default:
		return nil, fmt.Errorf("sandbox: unknown isolation %q", iso)
	}
	cmd.SysProcAttr = attr
	cmd.ExtraFiles = append([]*os.File{reqR, repW, fdsTheirs}, extra...) // fd 3, 4, 5 (and 6: bwrap's seccomp program)
	cmd.Stdin = nil
	cmd.Stdout = w.stderr
	cmd.Stderr = w.stderr
	// A daemon that escaped the kill may hold stdout/stderr: Wait must not wait for it.
	cmd.WaitDelay = time.Second
	w.cmd = cmd
	if err := cmd.Start(); err != nil {
		reqR.Close()
		repW.Close()
		reqW.Close()
		repR.Close()
		fdsOurs.Close()
		fdsTheirs.Close()
		w.cleanupDir()
		return nil, fmt.Errorf("sandbox: starting %s worker: %w", iso, err)
	}
	reqR.Close()
	repW.Close()
	fdsTheirs.Close()
	go func() {
		err := cmd.Wait()
		w.markDead(&Error{Kind: KindCrash, Op: "worker", Msg: fmt.Sprintf("worker exited: %v: %s", err, w.stderr.String())})
		w.cleanupDir()
		close(w.waited)
	}()
	helloCh := make(chan reply, 1)
	w.pending[0] = helloCh
	go w.readLoop()
	timer := time.NewTimer(o.StartTimeout)
	defer timer.Stop()
	select {
	case r := <-helloCh:
		w.hello = r.hello
		w.nextID.Store(1)
		if o.WorkerMemoryLimit > 0 {
			go w.watchMemory(o.WorkerMemoryLimit)
		}
		return w, nil
	case <-w.dead:
		w.kill()
		return nil, fmt.Errorf("sandbox: %s worker did not start: %w", iso, w.deadErr)
	case <-timer.C:
		w.kill()
		return nil, fmt.Errorf("sandbox: %s worker did not say hello within %s: %s", iso, o.StartTimeout, w.stderr.String())
	case <-ctx.Done():
		w.kill()
		return nil, ctx.Err()
	}
}

func (w *worker) cleanupDir() {
	if w.workDir != "" {
		_ = os.RemoveAll(w.workDir)
	}
}

// readLoop dispatches reply lines to their callers until the worker's fd 4 closes.
func (w *worker) readLoop() {
	reader := bufio.NewReaderSize(w.replies, 1<<16)
	limit := 16*w.opts.ObservationCap + (4 << 20)
	for {
		line, err := readLine(reader, limit)
		if err != nil {
			kind := KindCrash
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				kind = KindProtocol
			}
			w.markDead(&Error{Kind: kind, Op: "worker", Msg: fmt.Sprintf("worker reply stream ended: %v %s", err, w.stderr.String())})
			return
		}
		var r reply
		if err := json.Unmarshal(line, &r); err != nil {
			w.markDead(&Error{Kind: KindProtocol, Op: "worker", Msg: "worker sent a malformed reply"})
			return
		}
		w.mu.Lock()
		ch, ok := w.pending[r.ID]
		delete(w.pending, r.ID)
		w.mu.Unlock()
		if ok {
			ch <- r
		}
	}
}

// readLine reads one line of at most limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit {
			return nil, fmt.Errorf("reply longer than %d bytes", limit)
		}
		if err == nil {
			return buf, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// markDead records why the worker is unusable, kills it and fails every pending call.
func (w *worker) markDead(err error) {
	w.deadOnce.Do(func() {
		w.deadErr = err
		close(w.dead)
		w.kill()
	})
}

// kill ends the worker: SIGKILL to its process group. Under bwrap and the namespace init that
// group holds the PID namespace's init, whose death kills every process in the namespace,
// setsid daemons included.
func (w *worker) kill() {
	if w.cmd != nil && w.cmd.Process != nil {
		if w.iso == IsolationLandlock {
			// no PID namespace: the init (a subreaper) kills every descendant on SIGTERM,
			// setsid daemons included; SIGKILL follows in case it cannot
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
			pid := w.cmd.Process.Pid
			go func() {
				select {
				case <-w.waited:
				case <-time.After(2 * time.Second):
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			}()
		} else {
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			_ = w.cmd.Process.Kill()
		}
	}
	w.requests.Close()
	w.fds.Close()
}

// isDead reports whether the worker can no longer serve.
func (w *worker) isDead() bool {
	select {
	case <-w.dead:
		return true
	default:
		return false
	}
}

// call sends one request and waits for its reply, its deadline, ctx or the worker's death.
// A nil error means r.OK; a failed op comes back as *Error.
func (w *worker) call(ctx context.Context, op string, req map[string]any, timeout time.Duration) (reply, error) {
	return w.callWithSocket(ctx, op, req, timeout, nil)
}

// callWithSocket is call that first passes sock (one end of a socketpair) to the server over
// fd 5, tagged with req["key"], for the child the request spawns.
func (w *worker) callWithSocket(ctx context.Context, op string, req map[string]any, timeout time.Duration, sock *os.File) (reply, error) {
	id := w.nextID.Add(1)
	req["id"] = id
	req["op"] = op
	data, err := json.Marshal(req)
	if err != nil {
		return reply{}, fmt.Errorf("sandbox: encoding %s: %w", op, err)
	}
	ch := make(chan reply, 1)
	w.mu.Lock()
	w.pending[id] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.pending, id)
		w.mu.Unlock()
	}()
	w.writeMu.Lock()
	if sock != nil {
		err = unix.Sendmsg(int(w.fds.Fd()), []byte(fmt.Sprint(req["key"])), unix.UnixRights(int(sock.Fd())), nil, 0)
	}
	if err == nil {
		_, err = w.requests.Write(append(data, '\n'))
	}
	w.writeMu.Unlock()
	if err != nil {
		w.markDead(&Error{Kind: KindCrash, Op: op, Msg: "writing to worker: " + err.Error()})
		return reply{}, w.deadErrFor(op)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		if !r.OK {
			w.tainted.Store(true)
			return r, &Error{Kind: KindCrash, Op: op, Msg: "worker: " + r.Error}
		}
		return r, nil
	case <-timer.C:
		w.tainted.Store(true)
		return reply{}, &Error{Kind: KindTimeout, Op: op, Msg: fmt.Sprintf("no reply within %s", timeout)}
	case <-w.dead:
		return reply{}, w.deadErrFor(op)
	case <-ctx.Done():
		w.tainted.Store(true)
		return reply{}, ctx.Err()
	}
}

func (w *worker) deadErrFor(op string) error {
	var e *Error
	if errors.As(w.deadErr, &e) {
		c := *e
		c.Op = op
		return &c
	}
	return &Error{Kind: KindCrash, Op: op, Msg: fmt.Sprint(w.deadErr)}
}

// cappedBuffer keeps the first limit bytes written to it.
type cappedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

// Write implements io.Writer; bytes past the limit are dropped.
func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}

// String returns what was kept.
func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// unixRights encodes f as an SCM_RIGHTS control message.
func unixRights(f *os.File) []byte { return unix.UnixRights(int(f.Fd())) }

// processesOf counts the host's processes (threads included, as RLIMIT_NPROC does) whose real
// uid is uid.
func processesOf(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	want := fmt.Sprintf("Uid:\t%d\t", uid)
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil || !bytes.Contains(data, []byte(want)) {
			continue
		}
		n += int(max(statusField(data, "Threads"), 1))
	}
	return n
}

// workDirPrefix starts the name of a worker's working directory in the host's temp directory; the pid
// of the process that holds the worker follows, so a later process can tell the directories of holders
// that died without cleaning up (kill -9) from those of live ones.
const workDirPrefix = "spade-sandbox-"

// sweepWorkDirs runs removeStaleWorkDirs once per process, before its first worker directory.
var sweepWorkDirs sync.Once

// sandboxWorkDir makes a fresh working directory for a worker without a private /tmp, owned by the
// sandbox uid when we are root (the worker drops to that uid); the worker removes it when it exits, and
// the next process to make one removes it if its holder was killed first.
func sandboxWorkDir() (string, error) {
	sweepWorkDirs.Do(func() { removeStaleWorkDirs(os.TempDir()) })
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", workDirPrefix, os.Getpid()))
	if err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		_ = os.Chown(dir, SandboxUID, SandboxUID)
	}
	return dir, nil
}

// removeStaleWorkDirs removes the worker directories in tmp whose holder process no longer exists, and
// returns how many it removed. A directory whose holder's pid was reused by another process stays until
// that process ends: the check errs on the side of keeping.
func removeStaleWorkDirs(tmp string) int {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), workDirPrefix)
		digits, _, hasPid := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(digits)
		if !ok || !hasPid || err != nil || pid <= 0 || pid == os.Getpid() || !e.IsDir() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH && os.RemoveAll(filepath.Join(tmp, e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// processCPUSeconds returns the CPU seconds (user + system) of process pid: the larger of the sum
// of its live threads' run time in /proc/PID/task/*/schedstat (nanoseconds) and /proc/PID/stat's
// utime + stime + cutime + cstime (clock ticks of 1/100 s, Linux's USER_HZ; it also holds exited
// threads and reaped children); 0 when neither can be read.
func processCPUSeconds(pid int) float64 {
	dir := fmt.Sprintf("/proc/%d", pid)
	var nanos int64
	if tasks, err := os.ReadDir(dir + "/task"); err == nil {
		for _, task := range tasks {
			if data, err := os.ReadFile(dir + "/task/" + task.Name() + "/schedstat"); err == nil {
				var v int64
				fmt.Sscan(string(data), &v)
				nanos += v
			}
		}
	}
	ticks := int64(0)
	if data, err := os.ReadFile(dir + "/stat"); err == nil {
		// pid (comm) state ppid ...: comm may hold spaces and parentheses; utime is field 14
		if i := bytes.LastIndexByte(data, ')'); i >= 0 {
			if fields := bytes.Fields(data[i+1:]); len(fields) >= 15 {
				for _, f := range fields[11:15] {
					var v int64
					fmt.Sscan(string(f), &v)
					ticks += v
				}
			}
		}
	}
	return max(float64(nanos)/1e9, float64(ticks)/100)
}

// treeCPUSeconds is processCPUSeconds of pid and of every process below it, running or exited and not
// yet waited for (a waited child is in its parent's own count already): an instance's children burn its
// budget too. A process that left the tree (a daemon reparented to the namespace's init) is not seen; the
// worker's clean kills it. At most maxTreeProcesses processes are read.
func treeCPUSeconds(pid int) float64 {
	total := 0.0
	walkTree(pid, maxTreeProcesses, func(p, _ int) { total += processCPUSeconds(p) })
	return total
}

// walkTree calls visit for pid and then every process below it, breadth first (a parent before its
// children), with the parent's pid (0 for pid itself), until limit processes were seen.
func walkTree(pid, limit int, visit func(pid, parent int)) {
	type node struct{ pid, parent int }
	queue, seen := []node{{pid, 0}}, map[int]bool{pid: true}
	for len(queue) > 0 && len(seen) <= limit {
		n := queue[0]
		queue = queue[1:]
		visit(n.pid, n.parent)
		for _, child := range childPIDs(n.pid) {
			if !seen[child] {
				seen[child] = true
				queue = append(queue, node{child, n.pid})
			}
		}
	}
}

// maxTreeProcesses bounds the processes treeCPUSeconds reads (an instance has RLIMIT_NPROC's worth).
const maxTreeProcesses = 256

// childPIDs lists the children of every thread of pid (/proc/PID/task/TID/children).
func childPIDs(pid int) []int {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		data, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(data) {
			var v int
			if _, err := fmt.Sscan(string(f), &v); err == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// seccompPipe returns the read end of a pipe that holds the seccomp program (for bwrap).
func seccompPipe() (*os.File, error) {
	prog, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if _, err := w.Write(prog); err != nil { // far below a pipe's capacity
		r.Close()
		return nil, err
	}
	return r, nil
}

// memoryTick is how often watchMemory reads the worker's processes.
const memoryTick = 100 * time.Millisecond

// watchMemory ends the worker once its processes together hold more than limit bytes
// (Options.WorkerMemoryLimit), read every memoryTick by checkMemory. The worker's own process is the
// root of all it runs on every layer: a PID namespace's init (bwrap, namespaces) or the landlock init
// (a subreaper), so children that detached themselves (setsid daemons) are counted too.
func (w *worker) watchMemory(limit int64) {
	ticker := time.NewTicker(cmp.Or(w.opts.memoryTick, memoryTick))
	defer ticker.Stop()
	for {
		select {
		case <-w.dead:
			return
		case <-ticker.C:
		}
		if w.checkMemory() != nil {
			return
		}
	}
}

// checkMemory reads the memory the worker's processes hold now (treeMemoryBytes), raises the
// worker's high-water mark to it, and, when that mark is over Options.WorkerMemoryLimit, ends the
// worker with a memory error (every call in flight and to come fails with it, the worker is replaced)
// and returns that error; nil while the worker stayed within its limit or has none. The watchdog calls
// it every memoryTick; a call on a program that failed or whose deadline passed calls it once more
// before it says what happened, and one that succeeded calls checkMemoryAfterReply. So a tree over the
// limit when the call ends is a memory error whoever was first, the watchdog or the deadline, and the
// verdict does not depend on the machine's load. A worker that died of anything else returns nil.
func (w *worker) checkMemory() error {
	limit := w.opts.WorkerMemoryLimit
	if limit <= 0 || w.cmd == nil || w.cmd.Process == nil {
		return nil
	}
	if w.isDead() {
		if errors.Is(w.deadErr, ErrMemory) {
			return w.deadErr
		}
		return nil
	}
	used := treeMemoryBytes(w.cmd.Process.Pid)
	w.memoryReadAt.Store(time.Now().UnixNano())
	peak := w.peakMemory.Load()
	for used > peak && !w.peakMemory.CompareAndSwap(peak, used) {
		peak = w.peakMemory.Load()
	}
	peak = max(peak, used)
	if peak <= limit {
		return nil
	}
	w.tainted.Store(true)
	w.markDead(&Error{Kind: KindMemory, Op: "worker", Msg: fmt.Sprintf(
		"the program's processes together held %d MiB, over the worker's limit of %d MiB (sandbox.worker_memory_mb)", peak>>20, limit>>20)})
	if errors.Is(w.deadErr, ErrMemory) {
		return w.deadErr
	}
	return nil
}

// checkMemoryAfterReply is checkMemory for a call that succeeded: it reads the tree only when the last
// read is a memoryTick old or more (the watchdog is late, as a loaded machine makes it), and otherwise
// relies on that read, which saw what the call's processes held less than a tick before the reply. A read
// costs about as much as a step's round trip, so a fast step on a machine whose watchdog keeps time pays
// none; either way the verdict is what the tree held within one tick of the reply.
func (w *worker) checkMemoryAfterReply() error {
	if time.Since(time.Unix(0, w.memoryReadAt.Load())) < memoryTick {
		if w.isDead() && errors.Is(w.deadErr, ErrMemory) {
			return w.deadErr
		}
		return nil
	}
	return w.checkMemory()
}

// maxMemoryTreeProcesses bounds the processes treeMemoryBytes reads (a worker runs up to its
// RLIMIT_NPROC's worth).
const maxMemoryTreeProcesses = 4096

// treeMemoryBytes is the memory the processes under pid hold: each one's resident anonymous and shared
// memory (RssAnon + RssShmem), less its parent's where the parent is in the tree, since a forked child
// shares its parent's pages until it writes them (every instance is a fork of its program's template).
// A child that wrote over pages it shares is counted low by what it rewrote; one that allocates is
// counted by what it allocated.
func treeMemoryBytes(pid int) int64 {
	var total int64
	held := map[int]int64{} // what each process visited holds (its parent is visited first)
	walkTree(pid, maxMemoryTreeProcesses, func(p, parent int) {
		held[p] = processMemoryBytes(p)
		total += max(held[p]-held[parent], 0)
	})
	return total
}

// processMemoryBytes reads RssAnon + RssShmem of a process from /proc/PID/status (readable for a
// non-dumpable process too, unlike its smaps); 0 for a process that is gone.
func processMemoryBytes(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return (statusField(data, "RssAnon") + statusField(data, "RssShmem")) << 10 // (kB)
}

// statusField is the number after "name:" in the text of a /proc/PID/status file (0 where it has none).
func statusField(status []byte, name string) int64 {
	var v int64
	if i := bytes.Index(status, []byte("\n"+name+":")); i >= 0 {
		fmt.Sscan(string(status[i+len(name)+2:]), &v)
	}
	return v
}
