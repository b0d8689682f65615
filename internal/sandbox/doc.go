// Package sandbox runs generated Python environment programs in warm, isolated workers.
//
// A worker is one long-lived sandbox (bwrap, or the package's own namespace init, see
// Isolation) running the embedded, standard-library-only harness (harness.py) as an
// unprivileged uid (65534). The harness is a fork server: it preloads the allowlisted
// modules, freezes its heap and forks one child per env instance, so a fresh instance costs a
// fork instead of a sandbox start. Generated code only ever runs in those children.
//
// Wire protocol: JSON lines on a private pair of file descriptors (fd 3 requests, fd 4
// replies), never stdin/stdout. A child closes both before any generated code runs and talks
// to the harness over its own socketpair, so a print() or a write to any fd in generated code
// cannot forge or corrupt a reply; the child's stdout/stderr are captured, capped and returned
// in errors (Error.Output).
//
// Every call has a deadline. A call that misses it, an env process that dies, or one that
// breaks the protocol gives the caller a typed *Error (see Kind) and the env process is killed
// with its process group; the worker that hosted it is marked tainted and is killed (its whole
// PID namespace) and replaced when it is released, which also ends setsid daemons.
//
// Usage:
//
//	pool, err := sandbox.NewPool(sandbox.Options{})
//	prog, err := pool.Load(ctx, code)       // a worker dedicated to one program
//	env, err := prog.NewEnv(ctx)           // a fresh instance (forked child)
//	obs, err := env.Reset(ctx, seed)
//	res, err := env.Step(ctx, action)
//	env.Close(); prog.Close(); pool.Close()
package sandbox
