// Package sandbox runs generated Python environment programs in warm, isolated workers.
//
// A worker is one long-lived sandbox running the embedded, standard-library-only harness
// (harness.py) as an unprivileged uid (65534). The isolation layer is the strongest the host
// allows (see Isolation; `spade doctor` reports it): bwrap; else this package's own namespace
// init (a re-exec of the binary in new user, pid, net, ipc, uts and mount namespaces); else
// landlock + seccomp + rlimits; else nothing, which is refused unless Options.AllowUnsafe.
// The harness is a fork server: it preloads the allowlisted modules and freezes its heap; each
// loaded program gets a template process that executes it once and keeps warm instances forked
// ahead, so a fresh env instance costs a message instead of a sandbox start. Generated code
// only ever runs in templates and instances.
//
// Wire protocol: JSON lines on private file descriptors, never stdin/stdout: control requests
// on fd 3, replies on fd 4, and on fd 5 (SOCK_SEQPACKET) the sockets Go creates for each new
// child. Children close fds 3-5 before any generated code runs, so a print() or a write to any
// fd in generated code cannot reach the control channel. Go talks to each env instance directly
// on that instance's own socket (a step is one hop) and treats what arrives there as untrusted:
// exactly one bounded reply line per request, with the request's seq. Children's stdout and
// stderr are captured per program, capped, and returned in errors (Error.Output).
//
// Every call has a deadline. A call that misses it, an env process that dies, or one that
// breaks the protocol gives the caller a typed *Error (see Kind) and the env process is killed
// with its process group; the worker that hosted it is marked tainted and is killed (its whole
// PID namespace) and replaced when it is released, which also ends setsid daemons. An exception
// raised by the program (an env or memory error) taints the worker too, since processes the program
// started may outlive the instance that raised.
//
// One program cannot reach another. A worker belongs to one program at a time: at Program.Close
// the server kills every other process of its PID namespace, wipes the scratch space and checks
// its limits, and the worker is reused only when all is clean (bwrap, namespaces); on the landlock
// layer, and with Options.FreshWorkers, it is never reused. A program's source reaches only its own
// template, on the template's socket. The server and every child are non-dumpable, and one seccomp
// filter on every layer denies ptrace, process_vm_*, pidfd_open/pidfd_getfd, limits and priorities
// of other processes, and naming sockets (bind/connect/listen/accept). Each template and instance
// works in its own scratch directory, to which landlock confines it (abstract sockets and signals
// too on landlock ABI >= 6), and which holds at most Options.ScratchBytes: the harness keeps that
// limit on every layer (RLIMIT_FSIZE, an audit hook on opening files for writing, a check after
// every call; an instance over it gets a KindOutput error and is killed, its siblings go on). What we record is ours: Go caps observations on the bytes it got and
// reads an instance's CPU time from /proc of the process the kernel says sent its replies.
//
// Usage:
//
//	pool, err := sandbox.NewPool(ctx, sandbox.Options{}) // no worker starts yet
//	if err != nil {
//		return err
//	}
//	defer pool.Close()
//	prog, err := pool.Load(ctx, code) // a worker dedicated to one program
//	if err != nil {
//		return err // a *sandbox.Error (see Kind)
//	}
//	defer prog.Close()
//	env, err := prog.NewEnv(ctx) // a fresh instance (forked child)
//	if err != nil {
//		return err
//	}
//	defer env.Close()
//	obs, err := env.Reset(ctx, seed) // seed int64
//	if err != nil {
//		return err
//	}
//	res, err := env.Step(ctx, action) // res.Observation, res.Reward, res.Done, res.Info, res.Success()
package sandbox
