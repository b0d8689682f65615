package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Kind classifies a failed sandbox call.
type Kind string

// The kinds of failure a call can report.
const (
	// KindEnv: the generated code raised an exception or returned values of the wrong type.
	KindEnv Kind = "env"
	// KindTimeout: the call missed its deadline (or the env used up its CPU seconds).
	KindTimeout Kind = "timeout"
	// KindMemory: the env ran out of its address-space limit.
	KindMemory Kind = "memory"
	// KindCrash: the env process (or the worker) died.
	KindCrash Kind = "crash"
	// KindProtocol: the env or the worker sent something the protocol does not allow.
	KindProtocol Kind = "protocol"
	// KindOutput: an observation, info or the captured stdout/stderr exceeded its cap.
	KindOutput Kind = "output"
)

// Error is the typed error every failed sandbox call returns.
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// Op is the operation that failed: check, load, new, reset, step, tools, eval.
	Op string
	// Msg describes the failure (for KindEnv, the exception type and message).
	Msg string
	// Trace is the tail of the Python traceback for KindEnv, if any.
	Trace string
	// Output is the tail of what the env printed to stdout/stderr, capped.
	Output string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("sandbox: %s: %s: %s", e.Op, e.Kind, e.Msg)
}

// Is reports whether target is an *Error of the same Kind, so errors.Is(err, ErrTimeout) works.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Kind == e.Kind && (t.Op == "" || t.Op == e.Op)
	}
	return false
}

// Sentinels for errors.Is; they match any *Error of their Kind.
var (
	// ErrEnv matches errors of KindEnv.
	ErrEnv = &Error{Kind: KindEnv}
	// ErrTimeout matches errors of KindTimeout.
	ErrTimeout = &Error{Kind: KindTimeout}
	// ErrMemory matches errors of KindMemory.
	ErrMemory = &Error{Kind: KindMemory}
	// ErrCrash matches errors of KindCrash.
	ErrCrash = &Error{Kind: KindCrash}
	// ErrProtocol matches errors of KindProtocol.
	ErrProtocol = &Error{Kind: KindProtocol}
	// ErrOutput matches errors of KindOutput.
	ErrOutput = &Error{Kind: KindOutput}
)

// ErrNoIsolation is returned by NewPool when no isolation layer works on this host and
// Options.AllowUnsafe is false.
var ErrNoIsolation = errors.New("sandbox: no isolation layer works on this host (bwrap probe and user namespaces both failed); " +
	"install bubblewrap (apt-get install -y bubblewrap) or enable unprivileged user namespaces, " +
	"or pass --unsafe-no-isolation to run generated code unconfined")

// ErrClosed is returned by calls on a closed pool, program or env.
var ErrClosed = errors.New("sandbox: closed")

// invalidTextPrefix starts the message of an env error for text the lake must not hold (IsInvalidText).
const invalidTextPrefix = "InvalidText: "

// IsInvalidText reports whether err is an env's observation or info refused for holding a NUL
// character or invalid UTF-8, by the harness or by checkText: a KindEnv error (an env fault) whose
// message says which text of which call was refused.
func IsInvalidText(err error) bool {
	var se *Error
	return errors.As(err, &se) && se.Kind == KindEnv && strings.HasPrefix(se.Msg, invalidTextPrefix)
}

// nulEscape matches a JSON \u0000 escape that is not itself an escaped backslash followed by "u0000".
var nulEscape = regexp.MustCompile(`(^|[^\\])(\\\\)*\\u0000`)

// checkText refuses a reply whose observation or info would carry a NUL character or invalid UTF-8
// into the lake, whatever the harness in the instance was made to check: a KindEnv error naming the
// call and the text (IsInvalidText).
func checkText(op string, r reply) error {
	bad := func(what, why string) error {
		return &Error{Kind: KindEnv, Op: op, Msg: invalidTextPrefix + "the env's " + what + " " + why + ", which is not allowed in text it returns"}
	}
	if strings.IndexByte(r.Obs, 0) >= 0 {
		return bad("observation", "contains a NUL character")
	}
	if !utf8.ValidString(r.Obs) {
		return bad("observation", "is not valid UTF-8")
	}
	if bytes.IndexByte(r.Info, 0) >= 0 || (bytes.Contains(r.Info, []byte(`\u0000`)) && nulEscape.Match(r.Info)) {
		return bad("info", "contains a NUL character")
	}
	if !utf8.Valid(r.Info) {
		return bad("info", "is not valid UTF-8")
	}
	return nil
}
