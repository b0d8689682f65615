package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// The check names, in the order they run (schemas.GateResultRow.Check).
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
)

// GamesChecks and ToolsChecks list the checks of each setting in order.
var (
	GamesChecks = []string{CheckStatic, CheckLoad, CheckInstantiate, CheckReset, CheckSmoke, CheckTrivial, CheckHintLeak}
	ToolsChecks = append(append([]string{}, GamesChecks...), CheckToolsSchema, CheckToolsReset, CheckToolsConditions, CheckToolsScreen)
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

// FailureText is the message handed back to the Designer: the failed check and its error.
func (v Verdict) FailureText() string {
	if f := v.Failure(); f != nil {
		return fmt.Sprintf("gate check %q failed: %s", f.Check, f.Error)
	}
	return ""
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
	// NoStatic switches the static check off (it is recorded as skipped). The sandbox alone must
	// then contain the program; tests use it to prove that.
	NoStatic bool
	// Rules are the static check's lists (default sandbox.DefaultStaticRules()).
	Rules *sandbox.StaticRules
	// Screen is the tools setting's LLM screen; nil records tools_screen as skipped.
	Screen Screen
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

// checker runs the checks of one program, recording results in order.
type checker struct {
	ctx     context.Context
	pool    *sandbox.Pool
	opts    CheckOptions
	code    string
	checks  []string
	results []CheckResult
	failed  bool
	infra   error
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
func (c *checker) run(name string, fn func() (skipReason string, err error)) {
	if c.failed {
		c.results = append(c.results, CheckResult{Check: name, Skipped: true, Error: "skipped: an earlier check failed"})
		return
	}
	start := time.Now()
	skip, err := fn()
	r := CheckResult{Check: name, Duration: time.Since(start)}
	var se *sandbox.Error
	if err != nil && c.infra == nil && !errors.As(err, &se) && (isInfra(err) || c.ctx.Err() != nil) {
		c.infra = fmt.Errorf("gate: check %s could not run: %w", name, err)
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

// Check runs every gate check of the setting on code, in order, and returns the verdict.
// Generated code runs only in pool's sandboxes.
func Check(ctx context.Context, pool *sandbox.Pool, code string, opts CheckOptions) Verdict {
	if opts.Setting == "" {
		opts.Setting = schemas.SettingGames
	}
	if opts.ResetSeeds <= 0 {
		opts.ResetSeeds = 3
	}
	if opts.Setting == schemas.SettingTools && opts.ResetSeeds < 5 {
		opts.ResetSeeds = 5
	}
	rules := sandbox.DefaultStaticRules()
	if opts.Rules != nil {
		rules = *opts.Rules
	}
	c := &checker{ctx: ctx, pool: pool, opts: opts, code: code}
	var (
		prog     *sandbox.Program
		env      *sandbox.Env
		firstObs []string
		probeRes []sandbox.StepResult
		toolsRaw json.RawMessage
	)
	defer func() {
		if prog != nil {
			prog.Close()
		}
	}()
	seeds := make([]int64, opts.ResetSeeds)
	for i := range seeds {
		seeds[i] = int64(i)
	}

	c.run(CheckStatic, func() (string, error) {
		if opts.NoStatic {
			return "static check switched off", nil
		}
		problems, err := pool.Check(ctx, code, string(opts.Setting), rules)
		if err != nil {
			return "", sandboxErr(err)
		}
		if len(problems) > 0 {
			return "", errors.New(strings.Join(problems, "; "))
		}
		return "", nil
	})
	var class string
	c.run(CheckLoad, func() (string, error) {
		var err error
		prog, err = pool.Load(ctx, code)
		if err != nil {
			return "", sandboxErr(err)
		}
		class = prog.Class
		if opts.Setting == schemas.SettingTools && !prog.HasTools {
			return "", fmt.Errorf("class %s has no tools() method (required in the tools setting)", prog.Class)
		}
		return "", nil
	})
	c.run(CheckInstantiate, func() (string, error) {
		var err error
		env, err = prog.NewEnv(ctx)
		return "", err
	})
	c.run(CheckReset, func() (string, error) {
		for _, seed := range seeds {
			obs, err := env.Reset(ctx, seed)
			if err != nil {
				return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
			}
			if strings.TrimSpace(obs) == "" {
				return "", fmt.Errorf("reset(seed=%d) returned an empty observation", seed)
			}
			firstObs = append(firstObs, obs)
		}
		// the same seeds again, in reverse order, on a fresh instance: a reset may depend only on its seed
		fresh, err := prog.NewEnv(ctx)
		if err != nil {
			return "", fmt.Errorf("second instance: %w", err)
		}
		defer fresh.Close()
		for i := len(seeds) - 1; i >= 0; i-- {
			obs, err := fresh.Reset(ctx, seeds[i])
			if err != nil {
				return "", fmt.Errorf("reset(seed=%d) on a fresh instance: %w", seeds[i], err)
			}
			if obs != firstObs[i] {
				return "", fmt.Errorf("reset is not deterministic: seed %d gave %q, then %q", seeds[i], clip(firstObs[i]), clip(obs))
			}
		}
		return "", nil
	})
	c.run(CheckSmoke, func() (string, error) {
		for _, probe := range Probes(opts.Hint) {
			if _, err := env.Reset(ctx, seeds[0]); err != nil {
				return "", fmt.Errorf("reset(seed=%d): %w", seeds[0], err)
			}
			res, err := env.Step(ctx, probe)
			if err != nil {
				return "", fmt.Errorf("step(%q) after reset(seed=%d): %w", clip(probe), seeds[0], err)
			}
			probeRes = append(probeRes, res)
		}
		// and the probes in a row, without a reset between them, until the episode ends
		if _, err := env.Reset(ctx, seeds[0]); err != nil {
			return "", fmt.Errorf("reset(seed=%d): %w", seeds[0], err)
		}
		for _, probe := range Probes(opts.Hint) {
			res, err := env.Step(ctx, probe)
			if err != nil {
				return "", fmt.Errorf("step(%q) in sequence: %w", clip(probe), err)
			}
			if res.Done {
				break
			}
		}
		return "", nil
	})
	c.run(CheckTrivial, func() (string, error) {
		for _, res := range probeRes {
			if !(res.Done && res.Success()) {
				return "", nil
			}
		}
		return "", errors.New("every probe action (empty, a number, a long string, garbage, the hint) solves the env at once: it is trivial")
	})
	c.run(CheckHintLeak, func() (string, error) {
		if strings.TrimSpace(opts.Hint) == "" {
			// No hint yet: under generate.hint_mode = separate it is written after acceptance (inline
			// answers without a hint never parse, so they do not reach the checks).
			return "no hint to probe (generate.hint_mode = separate writes it after acceptance)", nil
		}
		for _, action := range hintLeakActions(opts.Hint) {
			for _, seed := range seeds {
				if _, err := env.Reset(ctx, seed); err != nil {
					return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
				}
				res, err := env.Step(ctx, action)
				if err != nil {
					return "", fmt.Errorf("step(%q): %w", clip(action), err)
				}
				if res.Done && res.Success() {
					what := "the hint text"
					if action != opts.Hint {
						what = fmt.Sprintf("the number %s from the hint", action)
					}
					return "", fmt.Errorf("submitting %s as the first action solves the env (seed %d): the hint leaks the answer", what, seed)
				}
			}
		}
		return "", nil
	})
	if opts.Setting == schemas.SettingTools {
		var instructions []string
		c.run(CheckToolsSchema, func() (string, error) {
			var err error
			toolsRaw, err = env.Tools(ctx)
			if err != nil {
				return "", err
			}
			return "", ValidateToolSchemas(toolsRaw)
		})
		c.run(CheckToolsReset, func() (string, error) {
			fresh, err := prog.NewEnv(ctx)
			if err != nil {
				return "", err
			}
			defer fresh.Close()
			for _, seed := range seeds {
				a, err := env.Reset(ctx, seed)
				if err != nil {
					return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
				}
				b, err := fresh.Reset(ctx, seed)
				if err != nil {
					return "", fmt.Errorf("reset(seed=%d) on a fresh instance: %w", seed, err)
				}
				if a != b {
					return "", fmt.Errorf("reset is not deterministic: seed %d gave %q, then %q", seed, clip(a), clip(b))
				}
				instructions = append(instructions, a)
				again, err := fresh.Tools(ctx)
				if err != nil {
					return "", fmt.Errorf("tools() after reset(seed=%d): %w", seed, err)
				}
				if !jsonEqual(again, toolsRaw) {
					return "", fmt.Errorf("tools() changes between instances or seeds (seed %d)", seed)
				}
			}
			return "", nil
		})
		c.run(CheckToolsConditions, func() (string, error) {
			for _, seed := range seeds {
				if _, err := env.Reset(ctx, seed); err != nil {
					return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
				}
				raw, err := env.Eval(ctx, "success_conditions")
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
		})
		c.run(CheckToolsScreen, func() (string, error) {
			if opts.Screen == nil {
				return "no screen model configured", nil
			}
			reachable, reason, err := opts.Screen.Screen(ctx, code, toolsRaw, instructions)
			if err != nil {
				return "", fmt.Errorf("screen: %w", err)
			}
			for i, ok := range reachable {
				if !ok {
					return "", fmt.Errorf("the screen found no tool chain that completes instruction %d: %s", i+1, reason)
				}
			}
			return "", nil
		})
	}
	v := Verdict{Class: class, Results: c.results, Accepted: !c.failed, Err: c.infra}
	if v.Err != nil {
		v.Accepted = false
	}
	return v
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
