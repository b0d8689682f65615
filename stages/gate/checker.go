package gate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// CheckOptions configures the checks.
type CheckOptions struct {
	// Setting is games or tools.
	Setting schemas.Setting
	// Hint is the privileged hint (probed as an action and for leaked numbers).
	Hint string
	// ResetSeeds is how many seeds the determinism check uses (default 3; tools: at least 5).
	ResetSeeds int
	// RunSeed, Step and EnvID name the candidate whose reset seeds each check draws (GateSeed),
	// so a re-run draws the same ones. An empty EnvID stands for the code's SHA-256 (`spade env
	// check`).
	RunSeed, Step int64
	EnvID         string
	// TurnDelay spaces the trivial and hint_leak probes like an Agent's turns: between a reset
	// and the probe's step the gate waits TurnDelay plus a jitter below TurnDelay, so a program
	// cannot tell it from an Agent by a step that follows its reply at once. 0 means
	// DefaultTurnDelay; negative means no wait.
	TurnDelay time.Duration
	// TurnDelays, when not empty, are the Agent's recorded turn latencies (AgentTurnDelays): each wait
	// is one of them, drawn with the candidate's seed, instead of TurnDelay and its jitter.
	TurnDelays []time.Duration
	// NoStatic switches the static check off (it is recorded as skipped). The sandbox alone must
	// then contain the program; tests use it to prove that.
	NoStatic bool
	// Rules are the static check's lists (default sandbox.DefaultStaticRules()).
	Rules *sandbox.StaticRules
	// Screen is the tools setting's LLM screen; nil records tools_screen as skipped.
	Screen Screen
	// Checks is the check set (gate.checks): strict (the default) or official.
	Checks config.GateChecks
	// Probes is where the trivial check's first actions come from (gate.probes; "" is drawn).
	Probes config.GateProbes
	// LoadTimeout, when positive, bounds the program's load, its instances' creation and their resets
	// instead of the pool's deadline (sandbox.WithLoadTimeout; gate.load_timeout_seconds).
	LoadTimeout time.Duration
	// Shape is what the official checks under the gymnasium contract ask of a program's form (gate.shape;
	// "" is lenient): authors refuses an env class not named ...Env, a reset returning (observation, None)
	// and the old 4-tuple step, as the authors' loader does.
	Shape config.GateShape
	// Contract is the env contract the programs were asked for (generate.contract; "" is gymnasium): it
	// picks the official tables (legacy: without the validate check).
	Contract schemas.EnvContract
	// ToolsChecks is the official tools check set (gate.tools_checks; "" is spade): authors runs the
	// authors' tool-use validation (no tools() required, their reset gate, their validator as the
	// screen).
	ToolsChecks config.GateToolsChecks
}

// DefaultTurnDelay is the default CheckOptions.TurnDelay: waits of 2 to 4 ms. An Agent's turn
// takes seconds; the gate stays fast by playing the trivial probes and hint_leak's actions
// concurrently.
const DefaultTurnDelay = 2 * time.Millisecond

// minGateSeed is the smallest seed GateSeed returns.
const minGateSeed = 1 << 16

// GateSeed returns reset seed number `index` of check `check` on a candidate: 31 bits of
// SHA-256(run seed, step, env key, "gate", check, index), drawn like rollout's episode seeds
// (rollout.EpisodeSeed) so that a program cannot tell the gate's seeds from an episode's; the
// same candidate and check always get the same seeds. A value below 2^16 is drawn again (with a
// counter appended), so no gate seed is one of the small seeds 0..2^16-1, which a program could
// single out as a check's; an episode seed is that small with probability 2^-15.
func GateSeed(runSeed, step int64, envKey, check string, index int) int64 {
	for round := 0; ; round++ {
		sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%d\x00%s\x00gate\x00%s\x00%d\x00%d", runSeed, step, envKey, check, index, round))
		if seed := int64(binary.BigEndian.Uint32(sum[:4]) >> 1); seed >= minGateSeed {
			return seed
		}
	}
}

// checker runs the checks of one program, recording results in order, and carries what one
// check hands to the next.
type checker struct {
	ctx       context.Context
	pool      *sandbox.Pool
	opts      CheckOptions
	rules     sandbox.StaticRules
	code      string
	envKey    string // the candidate's part of GateSeed
	results   []CheckResult
	failed    bool
	infra     error
	jitter    *rand.Rand // the turn delays' jitter, seeded from the candidate
	jitterMu  sync.Mutex
	seedMu    sync.Mutex
	seedIndex map[int64]int // see Verdict.seedIndex
	spare     *sandbox.Env  // set by instantiate: an instance nothing ran on yet, which reset takes

	prog  *sandbox.Program // set by load
	class string           // set by load

	// The static check loads the program in the same child when it passes (sandbox.Pool.LoadChecked):
	// loaded says it did, loadErr is the load's failure for the load check to report, and loadShare is
	// the part of the static check's wall time that was the load's, counted to the load check.
	loaded       bool
	loadErr      error
	loadShare    time.Duration
	toolsRaw     json.RawMessage // set by tools_schema
	contractMu   sync.Mutex
	contract     schemas.EnvContract // the shape of the first step that returned (noteShape)
	instructions []string            // set by tools_reset: the first observation of each seed
}

// infraError marks an error of the sandbox's machinery rather than of the program.
type infraError struct{ err error }

func (e infraError) Error() string { return e.err.Error() }
func (e infraError) Unwrap() error { return e.err }

func isInfra(err error) bool {
	var ie infraError
	return errors.As(err, &ie) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sandbox.ErrClosed)
}

// sandboxErr passes a program's failure (*sandbox.Error) through and marks anything else as
// the machinery's.
func sandboxErr(err error) error {
	var se *sandbox.Error
	if err == nil || errors.As(err, &se) {
		return err
	}
	return infraError{err}
}

// run executes one check unless an earlier one failed.
func (c *checker) run(chk gateCheck) {
	if c.failed {
		c.results = append(c.results, CheckResult{Check: chk.name, Skipped: true, Error: "skipped: an earlier check failed"})
		return
	}
	start := time.Now()
	skip, err := chk.run(c)
	c.record(chk, skip, err, time.Since(start))
}

// runOverlapped runs first and then second as run would, with second's probes playing while first's
// do: trivial and hint_leak spend most of their wall time in the waits between a probe's reset and
// its step, which overlap this way. second's outcome is recorded only when first passed (else it is
// "skipped: an earlier check failed", as if it had not run); neither sees the other's state.
func (c *checker) runOverlapped(first, second gateCheck) {
	if c.failed {
		c.run(first)
		c.run(second)
		return
	}
	type outcome struct {
		skip string
		err  error
		took time.Duration
	}
	done := make(chan outcome, 1)
	go func() {
		start := time.Now()
		skip, err := second.run(c)
		done <- outcome{skip, err, time.Since(start)}
	}()
	c.run(first)
	o := <-done
	if c.failed {
		c.results = append(c.results, CheckResult{Check: second.name, Skipped: true, Error: "skipped: an earlier check failed"})
		return
	}
	c.record(second, o.skip, o.err, o.took)
}

// record appends a check's result: passed, skipped (skip says why) or failed (err), and notes a
// failure of the sandbox's machinery as the verdict's error.
func (c *checker) record(chk gateCheck, skip string, err error, took time.Duration) {
	r := CheckResult{Check: chk.name, Duration: took}
	switch {
	case chk.name == CheckStatic && c.loaded && c.prog != nil:
		r.Duration, c.loadShare = c.prog.StaticTime, max(r.Duration-c.prog.StaticTime, 0)
	case chk.name == CheckLoad:
		r.Duration += c.loadShare
	}
	var se *sandbox.Error
	if err != nil && c.infra == nil && !errors.As(err, &se) && (isInfra(err) || c.ctx.Err() != nil) {
		c.infra = fmt.Errorf("gate: check %s could not run: %w", chk.name, err)
	}
	switch {
	case err != nil:
		r.Error = errorText(err)
		c.failed = true
	case skip != "":
		r.Skipped, r.Error = true, "skipped: "+skip
	default:
		r.Passed = true
	}
	c.results = append(c.results, r)
}

// errorText formats an error for a gate_results row, with the env's output tail and traceback.
func errorText(err error) string {
	text := err.Error()
	var se *sandbox.Error
	if errors.As(err, &se) {
		if se.Trace != "" {
			text += "\n" + strings.TrimSpace(se.Trace)
		}
		if se.Output != "" {
			out := se.Output
			if len(out) > 2000 {
				out = "…" + out[len(out)-2000:]
			}
			text += "\nenv output:\n" + out
		}
	}
	if len(text) > 8000 {
		text = text[:8000] + "…"
	}
	return text
}

// withDefaults fills in the setting (games), the static rules, the number of reset seeds (3; at
// least 5 in the tools setting) and the turn delay.
func (o CheckOptions) withDefaults() CheckOptions {
	if o.Setting == "" {
		o.Setting = schemas.SettingGames
	}
	if o.ResetSeeds <= 0 {
		o.ResetSeeds = 3
	}
	if o.Setting == schemas.SettingTools && o.ResetSeeds < 5 {
		o.ResetSeeds = 5
	}
	if o.Rules == nil {
		rules := sandbox.DefaultStaticRules()
		o.Rules = &rules
	}
	if o.TurnDelay == 0 {
		o.TurnDelay = DefaultTurnDelay
	}
	return o
}

// Check runs every gate check of the setting on code, in the order of the setting's check
// table (CheckNames), and returns the verdict. Generated code runs only in pool's sandboxes.
func Check(ctx context.Context, pool *sandbox.Pool, code string, opts CheckOptions) Verdict {
	opts = opts.withDefaults()
	ctx = sandbox.WithLoadTimeout(ctx, opts.LoadTimeout)
	c := &checker{ctx: ctx, pool: pool, opts: opts, rules: *opts.Rules, code: code, envKey: opts.EnvID, seedIndex: map[int64]int{}}
	if c.envKey == "" {
		sum := sha256.Sum256([]byte(code))
		c.envKey = hex.EncodeToString(sum[:])
	}
	c.jitter = rand.New(rand.NewPCG(uint64(GateSeed(opts.RunSeed, opts.Step, c.envKey, "turn_delay", 0)), 0))
	defer func() {
		if c.prog != nil {
			c.prog.Close()
		}
	}()
	checks := checkTable(opts.Setting, opts.Checks, opts.Contract, opts.ToolsChecks)
	for i := 0; i < len(checks); i++ {
		if i+1 < len(checks) && checks[i].name == CheckTrivial && checks[i+1].name == CheckHintLeak {
			c.runOverlapped(checks[i], checks[i+1])
			i++
			continue
		}
		c.run(checks[i])
	}
	v := Verdict{Class: c.class, Contract: c.contract, Results: c.results, Accepted: !c.failed, Err: c.infra, seedIndex: c.seedIndex}
	if v.Err != nil {
		v.Accepted = false
	}
	return v
}

// seed returns reset seed number index of a check (GateSeed) and notes its index for
// Verdict.FailureText.
func (c *checker) seed(check string, index int) int64 {
	seed := GateSeed(c.opts.RunSeed, c.opts.Step, c.envKey, check, index)
	c.seedMu.Lock()
	c.seedIndex[seed] = index
	c.seedMu.Unlock()
	return seed
}

// seeds returns the reset seeds of a check: ResetSeeds of them, drawn by GateSeed.
func (c *checker) seeds(check string) []int64 {
	seeds := make([]int64, c.opts.ResetSeeds)
	for i := range seeds {
		seeds[i] = c.seed(check, i)
	}
	return seeds
}

// freshEnv forks a fresh instance of the program; every check plays on its own instances, as
// every rollout episode does, so no state a program keeps per process carries from one check
// to the next.
func (c *checker) freshEnv() (*sandbox.Env, error) {
	return c.prog.NewEnv(c.ctx)
}

// probeResult is what one probe episode returned: its step, or the error of the stage that
// failed ("new" for the fresh instance, "reset" or "step").
type probeResult struct {
	res   sandbox.StepResult
	err   error
	stage string
}

// failure formats a failed probe episode's error for a check's row.
func (r probeResult) failure(action string, seed int64, stepFormat string) error {
	switch r.stage {
	case "new":
		return fmt.Errorf("fresh instance: %w", r.err)
	case "reset":
		return fmt.Errorf("reset(seed=%d): %w", seed, r.err)
	}
	return fmt.Errorf(stepFormat, clip(action), seed, r.err)
}

// turnWaits draws n waits like an Agent's turns: one of TurnDelays each where there are some, else
// TurnDelay plus a jitter below TurnDelay (none when TurnDelay is negative).
func (c *checker) turnWaits(n int) []time.Duration {
	waits := make([]time.Duration, n)
	if delays := c.opts.TurnDelays; len(delays) > 0 {
		c.jitterMu.Lock()
		for i := range waits {
			waits[i] = delays[c.jitter.IntN(len(delays))]
		}
		c.jitterMu.Unlock()
	} else if d := c.opts.TurnDelay; d > 0 {
		c.jitterMu.Lock() // trivial and hint_leak draw theirs concurrently (runOverlapped)
		for i := range waits {
			waits[i] = d + time.Duration(c.jitter.Int64N(int64(d)))
		}
		c.jitterMu.Unlock()
	}
	return waits
}

// firstAction plays one probe episode on env: reset(seed), wait, then step(action).
func (c *checker) firstAction(env *sandbox.Env, action string, seed int64, wait time.Duration) probeResult {
	if _, err := env.Reset(c.ctx, seed); err != nil {
		return probeResult{err: err, stage: "reset"}
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-c.ctx.Done():
			timer.Stop()
			return probeResult{err: c.ctx.Err(), stage: "step"}
		}
	}
	res, err := env.Step(c.ctx, action)
	return probeResult{res: res, err: err, stage: "step"}
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// lineNumber is the "line N: " the static check puts before each problem; gateSeed is a seed in a
// check's error; quoted strips the quotes around a module or name in a problem.
var (
	lineNumber = regexp.MustCompile(`^line \d+: `)
	gateSeed   = regexp.MustCompile(`\bseed=\d+`)
	quoted     = regexp.MustCompile(`'([A-Za-z0-9_.]+)'`)
)

// RefusalReason names why the program was refused in a few words that programs refused for the same
// reason share, for counting: the static check's first problem without its line ("import of subprocess
// is not allowed"), else the failed check and the first line of its error with the seeds left out
// ("validate: reset(seed=N): info is None, not a dict ..."); empty when the program was accepted.
func (v Verdict) RefusalReason() string {
	f := v.Failure()
	if f == nil {
		return ""
	}
	text, _, _ := strings.Cut(f.Error, "\n")
	if f.Check == CheckStatic {
		text, _, _ = strings.Cut(text, "; ")
		text = quoted.ReplaceAllString(lineNumber.ReplaceAllString(text, ""), "$1")
		return text
	}
	text = gateSeed.ReplaceAllString(text, "seed=N")
	if len(text) > 160 {
		text = text[:160] + "…"
	}
	return f.Check + ": " + text
}
