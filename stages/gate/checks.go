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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// The check names (schemas.GateResultRow.Check); the order they run in is the check tables'
// (gamesChecks, toolsChecks).
const (
	CheckStatic          = "static"
	CheckLoad            = "load"
	CheckInstantiate     = "instantiate"
	CheckReset           = "reset"
	CheckSmoke           = "smoke"
	CheckTrivial         = "trivial"
	CheckHintLeak        = "hint_leak"
	CheckToolsSchema     = "tools_schema"
	CheckToolsReset      = "tools_reset"
	CheckToolsConditions = "tools_conditions"
	CheckToolsScreen     = "tools_screen"
	CheckSteps           = "steps"
)

// GamesChecks and ToolsChecks list the checks of each setting in order; they are the names of
// the check tables (CheckNames).
var (
	GamesChecks = CheckNames(schemas.SettingGames)
	ToolsChecks = CheckNames(schemas.SettingTools)
)

// CheckResult is the verdict of one check.
type CheckResult struct {
	// Check is the check's name.
	Check string
	// Passed is true when the check passed.
	Passed bool
	// Skipped is true when the check did not run; Error then says why.
	Skipped bool
	// Error says why the check failed (or was skipped).
	Error string
	// Duration is the check's wall time.
	Duration time.Duration
}

// Verdict is the outcome of every check on one program.
type Verdict struct {
	// Accepted is true when every check passed or was skipped for want of a screen model.
	Accepted bool
	// Class is the env class found by the load check.
	Class string
	// Results holds one entry per check of the setting, in order.
	Results []CheckResult
	// Err is set when the checks could not run for a reason that is not the program's (the
	// sandbox could not start a worker, the context ended): the program was not judged.
	Err error
	// seedIndex maps each reset seed the checks drew to its index among its check's seeds.
	seedIndex map[int64]int
}

// Failure returns the first failed check, or nil when the program was accepted.
func (v Verdict) Failure() *CheckResult {
	for i := range v.Results {
		if !v.Results[i].Passed && !v.Results[i].Skipped {
			return &v.Results[i]
		}
	}
	return nil
}

// FailureText is the message handed back to the Designer: the failed check and its error, with
// each gate seed written as its index among its check's seeds ("reset(seed=0)" is the check's
// first seed). The Designer is the model being trained: shown the gate's seeds, it could learn to
// recognise them. The gate_results rows keep the seeds themselves.
func (v Verdict) FailureText() string {
	if f := v.Failure(); f != nil {
		return fmt.Sprintf("gate check %q failed: %s", f.Check, v.seedsAsIndices(f.Error))
	}
	return ""
}

var seedPattern = regexp.MustCompile(`\bseed([= ])(\d+)`)

// seedsAsIndices rewrites the gate seeds in text (seed=N, seed N) as their indices.
func (v Verdict) seedsAsIndices(text string) string {
	return seedPattern.ReplaceAllStringFunc(text, func(m string) string {
		sub := seedPattern.FindStringSubmatch(m)
		seed, err := strconv.ParseInt(sub[2], 10, 64)
		if index, ok := v.seedIndex[seed]; ok && err == nil {
			return "seed" + sub[1] + strconv.Itoa(index)
		}
		return m
	})
}

// Screen asks a model whether some chain of tool calls reaches each instruction's success
// condition (the tools setting's LLM screen). It returns one verdict per instruction and a
// short reason for any "no".
type Screen interface {
	Screen(ctx context.Context, code string, tools json.RawMessage, instructions []string) (reachable []bool, reason string, err error)
}

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
	// NoStatic switches the static check off (it is recorded as skipped). The sandbox alone must
	// then contain the program; tests use it to prove that.
	NoStatic bool
	// Rules are the static check's lists (default sandbox.DefaultStaticRules()).
	Rules *sandbox.StaticRules
	// Screen is the tools setting's LLM screen; nil records tools_screen as skipped.
	Screen Screen
	// Checks is the check set (gate.checks): strict (the default) or official.
	Checks config.GateChecks
}

// DefaultTurnDelay is the default CheckOptions.TurnDelay: waits of 2 to 4 ms. An Agent's turn
// takes seconds; the gate stays fast by stopping trivial at the first probe that does not solve
// the env and playing hint_leak's actions concurrently.
const DefaultTurnDelay = 2 * time.Millisecond

// maxParallelProbes bounds the instances hint_leak plays at once (each is a process in the
// program's worker, under its RLIMIT_NPROC).
const maxParallelProbes = 4

// replayActions are the actions the determinism check plays after a reset, on the first instance
// and again on a fresh one: short, plain answers that rarely end an episode.
var replayActions = []string{"1", "7", "a", "yes", "left", "42", "0", "b"}

// minGateSeed is the smallest seed GateSeed returns.
const minGateSeed = 1 << 16

// GateSeed returns reset seed number `index` of check `check` on a candidate: 31 bits of
// SHA-256(run seed, step, env key, "gate", check, index), drawn like rollout's episode seeds
// (rollout.EpisodeSeed) so that a program cannot tell the gate's seeds from an episode's; the
// same candidate and check always get the same seeds. A value below 2^16 is drawn again (with a
// counter appended), so the gate never uses the small seeds an old gate used (0..N-1); an
// episode seed is that small with probability 2^-15.
func GateSeed(runSeed, step int64, envKey, check string, index int) int64 {
	for round := 0; ; round++ {
		sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%d\x00%s\x00gate\x00%s\x00%d\x00%d", runSeed, step, envKey, check, index, round))
		if seed := int64(binary.BigEndian.Uint32(sum[:4]) >> 1); seed >= minGateSeed {
			return seed
		}
	}
}

// maxProbe is the length of the long-string probe.
const maxProbe = 4000

// Probes are the smoke-test actions: empty, a number, a long string, garbage, and the hint.
func Probes(hint string) []string {
	return []string{"", "7", strings.Repeat("long action ", maxProbe/12), "\x00}{][<>|\\;'\"`~ \u2603 garbage\n", hint}
}

var numberPattern = regexp.MustCompile(`-?\d+(?:\.\d+)?`)

// hintLeakActions are the first actions that must not solve the env: the hint and every
// number in it.
func hintLeakActions(hint string) []string {
	actions := []string{hint}
	seen := map[string]bool{hint: true}
	for _, n := range numberPattern.FindAllString(hint, -1) {
		if !seen[n] {
			seen[n] = true
			actions = append(actions, n)
		}
	}
	return actions
}

// gateCheck is one row of a check table: a check's name and the function that runs it.
type gateCheck struct {
	name string
	run  checkFunc
}

// checkFunc runs one check on the program being judged. It returns a reason when the check is
// skipped and an error when the program fails it; what later checks need (the loaded program,
// the first observations, the tool schemas) passes through the checker.
type checkFunc func(c *checker) (skipReason string, err error)

// gamesChecks is the games setting's check table: Check runs its rows in this order, and every
// other place that lists the order (GamesChecks, the CLI's description, the README's table)
// derives from it or is tested against it.
var gamesChecks = []gateCheck{
	{CheckStatic, (*checker).checkStatic},
	{CheckLoad, (*checker).checkLoad},
	{CheckInstantiate, (*checker).checkInstantiate},
	{CheckReset, (*checker).checkReset},
	{CheckSmoke, (*checker).checkSmoke},
	{CheckTrivial, (*checker).checkTrivial},
	{CheckHintLeak, (*checker).checkHintLeak},
}

// toolsChecks is the tools setting's check table: the games checks, then the tool-use ones
// (SPADE §3.3).
var toolsChecks = append(append([]gateCheck{}, gamesChecks...),
	gateCheck{CheckToolsSchema, (*checker).checkToolsSchema},
	gateCheck{CheckToolsReset, (*checker).checkToolsReset},
	gateCheck{CheckToolsConditions, (*checker).checkToolsConditions},
	gateCheck{CheckToolsScreen, (*checker).checkToolsScreen},
)

// officialGamesChecks is the check table of gate.checks = official, the authors' gate: the program
// loads, an instance is made, and reset then step("1"), step("2"), step("test") raise nothing. The
// static check stays on (an addition that does not change the method: it keeps hostile code out).
var officialGamesChecks = []gateCheck{
	{CheckStatic, (*checker).checkStatic},
	{CheckLoad, (*checker).checkLoad},
	{CheckInstantiate, (*checker).checkInstantiate},
	{CheckSteps, (*checker).checkSteps},
}

// officialToolsChecks adds the authors' tool-use gate to the official games table: the tool schemas,
// a reset gate on the tools and the LLM validator (the screen).
var officialToolsChecks = append(append([]gateCheck{}, officialGamesChecks...),
	gateCheck{CheckToolsSchema, (*checker).checkToolsSchema},
	gateCheck{CheckToolsReset, (*checker).checkToolsReset},
	gateCheck{CheckToolsScreen, (*checker).checkToolsScreen},
)

// checkTable returns the check table of a setting (games for anything but tools) and check set
// (strict for anything but official).
func checkTable(setting schemas.Setting, checks config.GateChecks) []gateCheck {
	official := checks == config.GateOfficial
	switch {
	case setting == schemas.SettingTools && official:
		return officialToolsChecks
	case setting == schemas.SettingTools:
		return toolsChecks
	case official:
		return officialGamesChecks
	}
	return gamesChecks
}

// CheckNames returns the names of the setting's strict checks in the order Check runs them (games
// for anything but tools): the order of the gate_results rows of one candidate attempt.
func CheckNames(setting schemas.Setting) []string {
	return CheckNamesFor(setting, config.GateStrict)
}

// CheckNamesFor returns the names of the checks of a setting and check set (gate.checks), in order.
func CheckNamesFor(setting schemas.Setting, checks config.GateChecks) []string {
	table := checkTable(setting, checks)
	names := make([]string, len(table))
	for i, chk := range table {
		names[i] = chk.name
	}
	return names
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
	instructions []string        // set by tools_reset: the first observation of each seed
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
	checks := checkTable(opts.Setting, opts.Checks)
	for i := 0; i < len(checks); i++ {
		if i+1 < len(checks) && checks[i].name == CheckTrivial && checks[i+1].name == CheckHintLeak {
			c.runOverlapped(checks[i], checks[i+1])
			i++
			continue
		}
		c.run(checks[i])
	}
	v := Verdict{Class: c.class, Results: c.results, Accepted: !c.failed, Err: c.infra, seedIndex: c.seedIndex}
	if v.Err != nil {
		v.Accepted = false
	}
	return v
}

// checkStatic verifies the program before it runs (sandbox.Pool.LoadChecked: in the child that then
// loads it, and only when the check passed): it parses, has exactly one env class (with tools() in
// the tools setting), imports only allowed modules and uses no flagged name or attribute. Skipped
// when CheckOptions.NoStatic is set.
func (c *checker) checkStatic() (string, error) {
	if c.opts.NoStatic {
		return "static check switched off", nil
	}
	prog, problems, err := c.pool.LoadChecked(c.ctx, c.code, string(c.opts.Setting), c.rules)
	var se *sandbox.Error
	if err != nil && !errors.As(err, &se) {
		return "", sandboxErr(err) // no worker or no child: the check did not run
	}
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "; "))
	}
	// The check passed; what the load did (the program, or why it failed) is the load check's.
	c.loaded, c.loadErr = true, err
	if prog != nil {
		c.prog, c.class = prog, prog.Class
	}
	return "", nil
}

// checkLoad verifies that the module executes in a sandbox and defines the env class (with a
// tools() method in the tools setting). Never skipped.
func (c *checker) checkLoad() (string, error) {
	if !c.loaded {
		prog, err := c.pool.Load(c.ctx, c.code)
		c.loaded, c.loadErr = true, err
		if prog != nil {
			c.prog, c.class = prog, prog.Class
		}
	}
	if c.loadErr != nil {
		return "", sandboxErr(c.loadErr)
	}
	prog := c.prog
	if c.opts.Setting == schemas.SettingTools && !prog.HasTools {
		return "", fmt.Errorf("class %s has no tools() method (required in the tools setting)", prog.Class)
	}
	return "", nil
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

// checkInstantiate verifies that the class instantiates on a fresh instance of the loaded
// program (which the reset check then plays first). Never skipped.
func (c *checker) checkInstantiate() (string, error) {
	env, err := c.freshEnv()
	c.spare = env
	return "", err
}

// checkReset verifies determinism: reset(seed) returns a non-empty observation for each of the
// check's seeds; the same seeds on a fresh instance, in reverse order, return the same
// observations (a reset may depend only on its seed); and replayActions played after a reset on
// the first instance and again on the second return the same observations, rewards and ends,
// step for step. A step that fails ends the replay there (the smoke check judges failing
// steps). The first instance is instantiate's, on which nothing ran yet. Never skipped.
func (c *checker) checkReset() (string, error) {
	seeds := c.seeds(CheckReset)
	first := c.spare
	c.spare = nil
	defer first.Close()
	firstObs := make([]string, len(seeds))
	for i, seed := range seeds {
		obs, err := first.Reset(c.ctx, seed)
		if err != nil {
			return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
		}
		if strings.TrimSpace(obs) == "" {
			return "", fmt.Errorf("reset(seed=%d) returned an empty observation", seed)
		}
		firstObs[i] = obs
	}
	fresh, err := c.freshEnv()
	if err != nil {
		return "", fmt.Errorf("second instance: %w", err)
	}
	defer fresh.Close()
	for i := len(seeds) - 1; i >= 0; i-- {
		obs, err := fresh.Reset(c.ctx, seeds[i])
		if err != nil {
			return "", fmt.Errorf("reset(seed=%d) on a fresh instance: %w", seeds[i], err)
		}
		if obs != firstObs[i] {
			return "", fmt.Errorf("reset is not deterministic: seed %d gave %q, then %q", seeds[i], clip(firstObs[i]), clip(obs))
		}
	}
	return "", c.replay(first, fresh, seeds[0])
}

// replay plays replayActions after reset(seed) on first, then on again, and compares the steps.
func (c *checker) replay(first, again *sandbox.Env, seed int64) error {
	if _, err := first.Reset(c.ctx, seed); err != nil {
		return fmt.Errorf("reset(seed=%d): %w", seed, err)
	}
	var played []sandbox.StepResult
	for _, action := range replayActions {
		res, err := first.Step(c.ctx, action)
		if err != nil {
			break
		}
		played = append(played, res)
		if res.Done {
			break
		}
	}
	if len(played) == 0 {
		return nil
	}
	if _, err := again.Reset(c.ctx, seed); err != nil {
		return fmt.Errorf("reset(seed=%d) on a fresh instance: %w", seed, err)
	}
	for i, want := range played {
		got, err := again.Step(c.ctx, replayActions[i])
		if err != nil {
			return fmt.Errorf("steps are not deterministic: after reset(seed=%d), step %d (%q) returned on one instance and failed on another: %w",
				seed, i+1, replayActions[i], err)
		}
		if got.Observation != want.Observation || got.Reward != want.Reward || got.Done != want.Done {
			return fmt.Errorf("steps are not deterministic: after reset(seed=%d) and the actions %q, step %d gave %q (reward %g, done %t), then %q (reward %g, done %t) on another instance",
				seed, replayActions[:i+1], i+1, clip(want.Observation), want.Reward, want.Done, clip(got.Observation), got.Reward, got.Done)
		}
	}
	return nil
}

// checkSmoke verifies that each probe (Probes: empty, a number, a long string, garbage, the
// hint) returns the right types and a finite reward as the first action after a reset, and
// that the probes also run in a row without a reset until the episode ends, on a fresh
// instance. Never skipped.
// officialActions are the actions the official gate plays after a reset.
var officialActions = []string{"1", "2", "test"}

// checkSteps is the official gate's play check: on instantiate's instance, reset(seed) and then
// step("1"), step("2"), step("test") raise no exception and break no contract (an episode that ends
// is reset before the next action). Nothing is judged about the observations or rewards. Never
// skipped.
func (c *checker) checkSteps() (string, error) {
	env := c.spare
	c.spare = nil
	defer env.Close()
	seed := c.seeds(CheckSteps)[0]
	if _, err := env.Reset(c.ctx, seed); err != nil {
		return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
	}
	for _, action := range officialActions {
		res, err := env.Step(c.ctx, action)
		if err != nil {
			return "", fmt.Errorf("step(%q) after reset(seed=%d): %w", action, seed, err)
		}
		if res.Done {
			if _, err := env.Reset(c.ctx, seed); err != nil {
				return "", fmt.Errorf("reset(seed=%d) after the episode ended: %w", seed, err)
			}
		}
	}
	return "", nil
}

func (c *checker) checkSmoke() (string, error) {
	env, err := c.freshEnv()
	if err != nil {
		return "", err
	}
	defer env.Close()
	seed := c.seeds(CheckSmoke)[0]
	for _, probe := range Probes(c.opts.Hint) {
		if _, err := env.Reset(c.ctx, seed); err != nil {
			return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
		}
		if _, err := env.Step(c.ctx, probe); err != nil {
			return "", fmt.Errorf("step(%q) after reset(seed=%d): %w", clip(probe), seed, err)
		}
	}
	if _, err := env.Reset(c.ctx, seed); err != nil {
		return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
	}
	for _, probe := range Probes(c.opts.Hint) {
		res, err := env.Step(c.ctx, probe)
		if err != nil {
			return "", fmt.Errorf("step(%q) in sequence: %w", clip(probe), err)
		}
		if res.Done {
			break
		}
	}
	return "", nil
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

// turnWaits draws n waits like an Agent's turns: TurnDelay plus a jitter below TurnDelay (none
// when TurnDelay is negative).
func (c *checker) turnWaits(n int) []time.Duration {
	waits := make([]time.Duration, n)
	if d := c.opts.TurnDelay; d > 0 {
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

// checkTrivial verifies that not every probe (Probes) solves the env as the first action. Each
// probe is played as rollout plays an episode: on its own fresh instance, with its own large
// seed (GateSeed), its step a turn after the reset (CheckOptions.TurnDelay); the check stops
// at the first probe that does not solve the env. Never skipped.
func (c *checker) checkTrivial() (string, error) {
	probes := Probes(c.opts.Hint)
	waits := c.turnWaits(len(probes))
	for i, action := range probes {
		seed := c.seed(CheckTrivial, i)
		r := probeResult{stage: "new"}
		env, err := c.freshEnv()
		if err == nil {
			r = c.firstAction(env, action, seed, waits[i])
			env.Close()
		} else {
			r.err = err
		}
		if r.err != nil {
			return "", r.failure(action, seed, "step(%q) after reset(seed=%d): %w")
		}
		if !(r.res.Done && r.res.Success()) {
			return "", nil
		}
	}
	return "", errors.New("every probe action (empty, a number, a long string, garbage, the hint) solves the env at once: it is trivial")
}

// checkHintLeak verifies that the hint is not empty and that neither the hint text nor any
// number in it (hintLeakActions) solves the env as the first action after any of the check's
// seeds. Each action plays on its own fresh instance, its first seed first (so a leak that a
// program allows once per process shows), each step a turn after its reset
// (CheckOptions.TurnDelay); the actions play concurrently. Never skipped.
func (c *checker) checkHintLeak() (string, error) {
	hint := c.opts.Hint
	if strings.TrimSpace(hint) == "" {
		// No hint yet: under generate.hint_mode = separate it is written after acceptance (inline
		// answers without a hint never parse, so they do not reach the checks).
		return "no hint to probe (generate.hint_mode = separate writes it after acceptance)", nil
	}
	actions, seeds := hintLeakActions(hint), c.seeds(CheckHintLeak)
	waits := make([][]time.Duration, len(actions))
	for i := range waits {
		waits[i] = c.turnWaits(len(seeds))
	}
	// played[i] holds action i's episodes, up to the first that failed or solved the env.
	played := make([][]probeResult, len(actions))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelProbes)
	for i, action := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			env, err := c.freshEnv()
			if err != nil {
				played[i] = []probeResult{{err: err, stage: "new"}}
				return
			}
			defer env.Close()
			for j, seed := range seeds {
				r := c.firstAction(env, action, seed, waits[i][j])
				played[i] = append(played[i], r)
				if r.err != nil || (r.res.Done && r.res.Success()) {
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, action := range actions {
		for j, r := range played[i] {
			seed := seeds[j]
			if r.err != nil {
				return "", r.failure(action, seed, "step(%q) after reset(seed=%d): %w")
			}
			if r.res.Done && r.res.Success() {
				what := "the hint text"
				if action != hint {
					what = fmt.Sprintf("the number %s from the hint", action)
				}
				return "", fmt.Errorf("submitting %s as the first action solves the env (seed %d): the hint leaks the answer", what, seed)
			}
		}
	}
	return "", nil
}

// checkToolsSchema verifies that tools() on a fresh instance returns valid OpenAI function
// schemas (ValidateToolSchemas). Tools setting only; never skipped there.
func (c *checker) checkToolsSchema() (string, error) {
	env, err := c.freshEnv()
	if err != nil {
		return "", err
	}
	defer env.Close()
	raw, err := env.Tools(c.ctx)
	if err != nil {
		return "", err
	}
	c.toolsRaw = raw
	return "", ValidateToolSchemas(raw)
}

// checkToolsReset verifies that reset and tools() are deterministic across instances and seeds:
// each of the check's seeds gives the same first observation (the instructions the screen
// reads) on two fresh instances, and tools() after each reset equals the schemas of
// tools_schema. Tools setting only; never skipped there.
func (c *checker) checkToolsReset() (string, error) {
	env, err := c.freshEnv()
	if err != nil {
		return "", err
	}
	defer env.Close()
	fresh, err := c.freshEnv()
	if err != nil {
		return "", err
	}
	defer fresh.Close()
	for _, seed := range c.seeds(CheckToolsReset) {
		a, err := env.Reset(c.ctx, seed)
		if err != nil {
			return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
		}
		b, err := fresh.Reset(c.ctx, seed)
		if err != nil {
			return "", fmt.Errorf("reset(seed=%d) on a fresh instance: %w", seed, err)
		}
		if a != b {
			return "", fmt.Errorf("reset is not deterministic: seed %d gave %q, then %q", seed, clip(a), clip(b))
		}
		c.instructions = append(c.instructions, a)
		again, err := fresh.Tools(c.ctx)
		if err != nil {
			return "", fmt.Errorf("tools() after reset(seed=%d): %w", seed, err)
		}
		if !jsonEqual(again, c.toolsRaw) {
			return "", fmt.Errorf("tools() changes between instances or seeds (seed %d)", seed)
		}
	}
	return "", nil
}

// checkToolsConditions verifies that success_conditions() returns 3 to 5 booleans (one per
// instruction) after each of the check's seeds, on a fresh instance. Tools setting only;
// skipped when the class defines no success_conditions().
func (c *checker) checkToolsConditions() (string, error) {
	env, err := c.freshEnv()
	if err != nil {
		return "", err
	}
	defer env.Close()
	for _, seed := range c.seeds(CheckToolsConditions) {
		if _, err := env.Reset(c.ctx, seed); err != nil {
			return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
		}
		raw, err := env.Eval(c.ctx, "success_conditions")
		if missingMethod(err, "success_conditions") {
			return "the class defines no success_conditions() to evaluate", nil
		}
		if err != nil {
			return "", fmt.Errorf("success_conditions() after reset(seed=%d): %w", seed, err)
		}
		var conds []any
		if err := json.Unmarshal(raw, &conds); err != nil {
			return "", fmt.Errorf("success_conditions() must return a list, got %s", clip(string(raw)))
		}
		if len(conds) < 3 || len(conds) > 5 {
			return "", fmt.Errorf("success_conditions() must return 3 to 5 conditions (one per instruction), got %d", len(conds))
		}
		for i, v := range conds {
			if _, ok := v.(bool); !ok {
				return "", fmt.Errorf("success condition %d is %v, not a boolean", i+1, v)
			}
		}
	}
	return "", nil
}

// checkToolsScreen verifies, through the screen model (CheckOptions.Screen), that some chain of
// tool calls reaches every instruction's success condition. Tools setting only; skipped when no
// screen model is configured.
func (c *checker) checkToolsScreen() (string, error) {
	if c.opts.Screen == nil {
		return "no screen model configured", nil
	}
	reachable, reason, err := c.opts.Screen.Screen(c.ctx, c.code, c.toolsRaw, c.instructions)
	if err != nil {
		return "", fmt.Errorf("screen: %w", err)
	}
	for i, ok := range reachable {
		if !ok {
			return "", fmt.Errorf("the screen found no tool chain that completes instruction %d: %s", i+1, reason)
		}
	}
	return "", nil
}

// missingMethod reports whether err says the env object has no attribute name.
func missingMethod(err error, name string) bool {
	var se *sandbox.Error
	return errors.As(err, &se) && se.Kind == sandbox.KindEnv && strings.HasPrefix(se.Msg, "AttributeError") &&
		strings.Contains(se.Msg, "'"+name+"'")
}

// ValidateToolSchemas checks that raw is a non-empty list of OpenAI function tools with
// unique names and object parameters.
func ValidateToolSchemas(raw json.RawMessage) error {
	var tools []map[string]any
	if err := json.Unmarshal(raw, &tools); err != nil {
		return fmt.Errorf("tools() must return a list of objects: %v", err)
	}
	if len(tools) == 0 {
		return errors.New("tools() returned no tools")
	}
	names := map[string]bool{}
	for i, tool := range tools {
		if tool["type"] != "function" {
			return fmt.Errorf("tool %d: type must be \"function\"", i)
		}
		fn, ok := tool["function"].(map[string]any)
		if !ok {
			return fmt.Errorf("tool %d: missing \"function\" object", i)
		}
		name, _ := fn["name"].(string)
		if !toolName.MatchString(name) {
			return fmt.Errorf("tool %d: name %q must match %s", i, name, toolName)
		}
		if names[name] {
			return fmt.Errorf("tool %d: duplicate name %q", i, name)
		}
		names[name] = true
		if d, ok := fn["description"]; ok {
			if _, isString := d.(string); !isString {
				return fmt.Errorf("tool %q: description must be a string", name)
			}
		}
		params, ok := fn["parameters"].(map[string]any)
		if !ok {
			return fmt.Errorf("tool %q: parameters must be a JSON schema object", name)
		}
		if params["type"] != "object" {
			return fmt.Errorf("tool %q: parameters.type must be \"object\"", name)
		}
		props, hasProps := params["properties"]
		if hasProps {
			if _, ok := props.(map[string]any); !ok {
				return fmt.Errorf("tool %q: parameters.properties must be an object", name)
			}
		}
		if req, ok := params["required"]; ok {
			list, isList := req.([]any)
			if !isList {
				return fmt.Errorf("tool %q: parameters.required must be a list", name)
			}
			propMap, _ := props.(map[string]any)
			for _, r := range list {
				s, _ := r.(string)
				if _, ok := propMap[s]; !ok {
					return fmt.Errorf("tool %q: required parameter %v is not among its properties", name, r)
				}
			}
		}
	}
	return nil
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
