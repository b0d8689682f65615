package gate

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// maxParallelProbes bounds the instances hint_leak plays at once (each is a process in the
// program's worker, under its RLIMIT_NPROC).
const maxParallelProbes = 4

// replayActions are the actions the determinism check plays after a reset, on the first instance
// and again on a fresh one: short, plain answers that rarely end an episode.
var replayActions = []string{"1", "7", "a", "yes", "left", "42", "0", "b"}

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

// checkStatic verifies the program before it runs (sandbox.Pool.LoadChecked: in the child that then
// loads it, and only when the check passed): it parses, has exactly one env class (with tools() in
// the tools setting, but under authorsTools), imports only allowed modules and uses no flagged name or attribute. Skipped
// when CheckOptions.NoStatic is set.
func (c *checker) checkStatic() (string, error) {
	if c.opts.NoStatic {
		return "static check switched off", nil
	}
	setting := string(c.opts.Setting)
	if c.authorsTools() {
		setting = string(schemas.SettingGames) // the authors' tools loader asks for no tools() method
	}
	prog, problems, err := c.pool.LoadChecked(c.ctx, c.code, setting, c.rules)
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
// tools() method in the tools setting, but under the authors' tool-use validation, authorsTools, which
// asks for none). Never skipped.
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
	if c.opts.Setting == schemas.SettingTools && !prog.HasTools && !c.authorsTools() {
		return "", fmt.Errorf("class %s has no tools() method (required in the tools setting)", prog.Class)
	}
	if c.authorsShape() && !authorsEnvName(prog.Class) {
		return "", fmt.Errorf("no class whose name ends in Env (found %s): the env class must be named ...Env", prog.Class)
	}
	return "", nil
}

// authorsValidation reports whether the checks judge as the authors' validation does: the official
// check set under the gymnasium contract (the legacy contract's official table is the gate as it was).
func (c *checker) authorsValidation() bool {
	return c.opts.Checks == config.GateOfficial && c.opts.Contract != schemas.ContractLegacy
}

// authorsTools reports whether a tools program is judged by the authors' tool-use validation: the
// official checks under gate.tools_checks authors.
func (c *checker) authorsTools() bool {
	return c.opts.Setting == schemas.SettingTools && c.opts.Checks == config.GateOfficial && c.opts.ToolsChecks == config.ToolsChecksAuthors
}

// authorsShape reports whether the checks hold the program to the authors' form (gate.shape authors under
// authorsValidation).
func (c *checker) authorsShape() bool {
	return c.authorsValidation() && c.opts.Shape == config.ShapeAuthors
}

// authorsEnvName reports whether the authors' loader takes a class of this name as the env: a name
// ending in Env other than the base classes' Env and ToolUseBaseEnv.
func authorsEnvName(class string) bool {
	return strings.HasSuffix(class, "Env") && class != "Env" && class != "ToolUseBaseEnv"
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
		c.noteShape(res)
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
		res, err := env.Step(c.ctx, probe)
		if err != nil {
			return "", fmt.Errorf("step(%q) after reset(seed=%d): %w", clip(probe), seed, err)
		}
		c.noteShape(res)
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

// checkTrivial verifies that not every probe solves the env as the first action. The probes are
// trivialProbes: under gate.probes drawn, Agent-like actions drawn for this candidate (an env that every
// one of them solves at once is trivial, whatever it does with the fixed probes, which a program can
// recognise); under fixed, Probes. Each is played as rollout plays an episode: on its own fresh
// instance, with its own large seed (GateSeed), its step a turn after the reset
// (CheckOptions.TurnDelay). The probes play one after another until the first that does not solve the
// env, which decides the verdict: playing the rest could not change it, and a program cannot tell
// which probe came first, since each plays in a process of its own that shares nothing with the
// others. A failure names the drawn probes (a re-run draws the same: the run seed, step and env id
// are in the lake). Never skipped.
func (c *checker) checkTrivial() (string, error) {
	probes, drawn := c.trivialProbes()
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
	if drawn {
		quoted := make([]string, len(probes))
		for i, d := range probes {
			quoted[i] = fmt.Sprintf("%q", clip(d))
		}
		return "", fmt.Errorf("every one of %d Agent-like probe actions drawn for this env solves the env at once (%s): it is trivial",
			len(probes), strings.Join(quoted, ", "))
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

// officialActions are the actions the official gate plays after a reset (the authors' validate_game).
var officialActions = []string{"1", "2", "test"}

// validateActions, validateSeed and validateReplaySeed are the load-time validation's actions and
// seeds, the ones a play's instance also runs before its reset (internal/play): fixed and public.
var validateActions = play.ValidationActions

const (
	validateSeed       = play.ValidationSeed
	validateReplaySeed = play.ValidationReplaySeed
	// validateRewardBound is the bound of the authors' reward range check: [−10, 10].
	validateRewardBound = 10
)

// checkValidate is the authors' validation of a loaded game, on the instance instantiate made: reset(seed=42)
// gives a non-empty observation and, where it returns a pair, a dict info; \boxed{1}, \boxed{test} and
// \boxed{42} each return the 5-tuple with the types the authors want (a bool terminated and truncated, an
// int or float reward, a dict info) and a reward in [−10, 10], stopping once the episode ends; then
// reset(seed=123) works. Each call is the program's own, as in the authors' validation (their wrapper's
// conversion of an exception into reward −1 is not around these calls), so a raise fails the check. The
// instance goes on to the steps check, as the authors' wrapper plays the instance it validated. Under
// gate.shape authors a reset returning (observation, None) and the old 4-tuple step fail (the authors'
// loader refuses them); else they pass the type rule (envs.contract says legacy). Never skipped.
func (c *checker) checkValidate() (string, error) {
	env := c.spare
	c.spare = nil
	handOn := false
	defer func() {
		if !handOn {
			env.Close()
		}
	}()
	obs, resetShape, err := env.ResetShaped(c.ctx, validateSeed)
	if err != nil {
		return "", fmt.Errorf("reset(seed=%d): %w", validateSeed, err)
	}
	if obs == "" {
		return "", fmt.Errorf("reset(seed=%d) returned an empty observation", validateSeed)
	}
	if c.authorsShape() && len(resetShape) > 0 {
		return "", fmt.Errorf("reset(seed=%d): %s (reset returns (observation, info) with info a dict, or an observation)", validateSeed, strings.Join(resetShape, "; "))
	}
	for _, action := range validateActions {
		res, err := env.Step(c.ctx, action)
		if err != nil {
			return "", fmt.Errorf("step(%q) after reset(seed=%d): %w", action, validateSeed, err)
		}
		c.noteShape(res)
		if c.authorsShape() && res.Shape.Legacy() {
			return "", fmt.Errorf("step(%q) after reset(seed=%d) returned the old 4-tuple (observation, reward, done, info); step returns (observation, reward, terminated, truncated, info)", action, validateSeed)
		}
		if len(res.Shape.Deviations) > 0 {
			return "", fmt.Errorf("step(%q) after reset(seed=%d): %s", action, validateSeed, strings.Join(res.Shape.Deviations, "; "))
		}
		if math.Abs(res.Reward) > validateRewardBound {
			return "", fmt.Errorf("step(%q) after reset(seed=%d): reward %g outside [-%d, %d]", action, validateSeed, res.Reward, validateRewardBound, validateRewardBound)
		}
		if res.Done {
			break
		}
	}
	if _, err := env.Reset(c.ctx, validateReplaySeed); err != nil {
		return "", fmt.Errorf("reset(seed=%d) after the episode: %w", validateReplaySeed, err)
	}
	if c.authorsValidation() {
		c.spare, handOn = env, true
	}
	return "", nil
}

// checkSteps verifies that after a reset, step("1"), step("2") and step("test") raise nothing, on the
// instance instantiate made (or a fresh one after validate). Under the gymnasium contract the plays
// stop once the episode ends, as the authors' validate_game does; under legacy the episode is reset
// and the actions go on (the gate as it was). Never skipped.
func (c *checker) checkSteps() (string, error) {
	env := c.spare
	c.spare = nil
	if env == nil {
		var err error
		if env, err = c.freshEnv(); err != nil {
			return "", err
		}
	}
	defer env.Close()
	seed := c.seeds(CheckSteps)[0]
	if c.authorsValidation() {
		return "", c.wrappedSteps(env, seed)
	}
	if _, err := env.Reset(c.ctx, seed); err != nil {
		return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
	}
	for _, action := range officialActions {
		res, err := env.Step(c.ctx, action)
		if err != nil {
			return "", fmt.Errorf("step(%q) after reset(seed=%d): %w", action, seed, err)
		}
		c.noteShape(res)
		if res.Done && c.opts.Contract != schemas.ContractLegacy {
			break
		}
		if res.Done {
			if _, err := env.Reset(c.ctx, seed); err != nil {
				return "", fmt.Errorf("reset(seed=%d) after the episode ended: %w", seed, err)
			}
		}
	}
	return "", nil
}

// wrappedSteps plays the authors' validate_game after their loader's validation: reset, then step("1"),
// step("2"), step("test") until one ends the episode, each through their wrapper, which turns what the
// program raises or returns malformed into reward −1 and the episode's end (and a reset that raises into
// a fresh start). So the program's own errors pass; what fails is what no wrapper absorbs: a call past
// its deadline, memory, a crash, an observation over the cap.
func (c *checker) wrappedSteps(env *sandbox.Env, seed int64) error {
	if _, err := env.Reset(c.ctx, seed); err != nil && !programRaised(err) {
		return fmt.Errorf("reset(seed=%d): %w", seed, err)
	}
	for _, action := range officialActions {
		res, err := env.Step(c.ctx, action)
		if err != nil && !programRaised(err) {
			return fmt.Errorf("step(%q) after reset(seed=%d): %w", action, seed, err)
		}
		if err != nil || res.Done {
			return nil
		}
	}
	return nil
}

// programRaised reports whether err is the program's own exception or wrong return (sandbox kind env),
// which the authors' wrapper absorbs, rather than a deadline, memory, a crash or the harness's caps.
func programRaised(err error) bool {
	var se *sandbox.Error
	return errors.As(err, &se) && se.Kind == sandbox.KindEnv
}

// noteShape keeps the contract of the first step that returned (Verdict.Contract); safe for the
// checks that play at once.
func (c *checker) noteShape(res sandbox.StepResult) {
	c.contractMu.Lock()
	defer c.contractMu.Unlock()
	if c.contract == "" {
		c.contract = schemas.ContractGymnasium
		if res.Shape.Legacy() {
			c.contract = schemas.ContractLegacy
		}
	}
}
