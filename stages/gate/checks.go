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
	Setting string
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

// checkTable returns the check table of a setting (games for anything but tools).
func checkTable(setting string) []gateCheck {
	if setting == schemas.SettingTools {
		return toolsChecks
	}
	return gamesChecks
}

// CheckNames returns the names of the setting's checks in the order Check runs them (games for
// anything but tools): the order of the gate_results rows of one candidate attempt.
func CheckNames(setting string) []string {
	table := checkTable(setting)
	names := make([]string, len(table))
	for i, chk := range table {
		names[i] = chk.name
	}
	return names
}

// checker runs the checks of one program, recording results in order, and carries what one
// check hands to the next.
type checker struct {
	ctx     context.Context
	pool    *sandbox.Pool
	opts    CheckOptions
	rules   sandbox.StaticRules
	code    string
	seeds   []int64
	results []CheckResult
	failed  bool
	infra   error

	prog         *sandbox.Program     // set by load
	class        string               // set by load
	env          *sandbox.Env         // set by instantiate
	firstObs     []string             // set by reset: the observation of each seed
	probeResults []sandbox.StepResult // set by smoke: each probe's step after a reset
	toolsRaw     json.RawMessage      // set by tools_schema
	instructions []string             // set by tools_reset: the first observation of each seed
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
	r := CheckResult{Check: chk.name, Duration: time.Since(start)}
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

// withDefaults fills in the setting (games), the static rules and the number of reset seeds
// (3; at least 5 in the tools setting).
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
	return o
}

// Check runs every gate check of the setting on code, in the order of the setting's check
// table (CheckNames), and returns the verdict. Generated code runs only in pool's sandboxes.
func Check(ctx context.Context, pool *sandbox.Pool, code string, opts CheckOptions) Verdict {
	opts = opts.withDefaults()
	c := &checker{ctx: ctx, pool: pool, opts: opts, rules: *opts.Rules, code: code}
	defer func() {
		if c.prog != nil {
			c.prog.Close()
		}
	}()
	c.seeds = make([]int64, opts.ResetSeeds)
	for i := range c.seeds {
		c.seeds[i] = int64(i)
	}
	for _, chk := range checkTable(opts.Setting) {
		c.run(chk)
	}
	v := Verdict{Class: c.class, Results: c.results, Accepted: !c.failed, Err: c.infra}
	if v.Err != nil {
		v.Accepted = false
	}
	return v
}

// checkStatic verifies the program without running it (sandbox.Pool.Check): it parses, has
// exactly one env class (with tools() in the tools setting), imports only allowed modules and
// uses no flagged name or attribute. Skipped when CheckOptions.NoStatic is set.
func (c *checker) checkStatic() (string, error) {
	if c.opts.NoStatic {
		return "static check switched off", nil
	}
	problems, err := c.pool.Check(c.ctx, c.code, c.opts.Setting, c.rules)
	if err != nil {
		return "", sandboxErr(err)
	}
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "; "))
	}
	return "", nil
}

// checkLoad verifies that the module executes in a sandbox and defines the env class (with a
// tools() method in the tools setting). Never skipped.
func (c *checker) checkLoad() (string, error) {
	prog, err := c.pool.Load(c.ctx, c.code)
	if err != nil {
		return "", sandboxErr(err)
	}
	c.prog, c.class = prog, prog.Class
	if c.opts.Setting == schemas.SettingTools && !prog.HasTools {
		return "", fmt.Errorf("class %s has no tools() method (required in the tools setting)", prog.Class)
	}
	return "", nil
}

// checkInstantiate verifies that the class instantiates (a fresh instance of the loaded
// program). Never skipped.
func (c *checker) checkInstantiate() (string, error) {
	env, err := c.prog.NewEnv(c.ctx)
	c.env = env
	return "", err
}

// checkReset verifies that reset(seed) returns a non-empty observation for each reset seed and
// that the same seeds on a fresh instance, in reverse order, return the same observations: a
// reset may depend only on its seed. Never skipped.
func (c *checker) checkReset() (string, error) {
	for _, seed := range c.seeds {
		obs, err := c.env.Reset(c.ctx, seed)
		if err != nil {
			return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
		}
		if strings.TrimSpace(obs) == "" {
			return "", fmt.Errorf("reset(seed=%d) returned an empty observation", seed)
		}
		c.firstObs = append(c.firstObs, obs)
	}
	fresh, err := c.prog.NewEnv(c.ctx)
	if err != nil {
		return "", fmt.Errorf("second instance: %w", err)
	}
	defer fresh.Close()
	for i := len(c.seeds) - 1; i >= 0; i-- {
		obs, err := fresh.Reset(c.ctx, c.seeds[i])
		if err != nil {
			return "", fmt.Errorf("reset(seed=%d) on a fresh instance: %w", c.seeds[i], err)
		}
		if obs != c.firstObs[i] {
			return "", fmt.Errorf("reset is not deterministic: seed %d gave %q, then %q", c.seeds[i], clip(c.firstObs[i]), clip(obs))
		}
	}
	return "", nil
}

// checkSmoke verifies that each probe (Probes: empty, a number, a long string, garbage, the
// hint) returns the right types and a finite reward as the first action after a reset, and
// that the probes also run in a row without a reset until the episode ends. Never skipped.
func (c *checker) checkSmoke() (string, error) {
	seed := c.seeds[0]
	for _, probe := range Probes(c.opts.Hint) {
		if _, err := c.env.Reset(c.ctx, seed); err != nil {
			return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
		}
		res, err := c.env.Step(c.ctx, probe)
		if err != nil {
			return "", fmt.Errorf("step(%q) after reset(seed=%d): %w", clip(probe), seed, err)
		}
		c.probeResults = append(c.probeResults, res)
	}
	if _, err := c.env.Reset(c.ctx, seed); err != nil {
		return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
	}
	for _, probe := range Probes(c.opts.Hint) {
		res, err := c.env.Step(c.ctx, probe)
		if err != nil {
			return "", fmt.Errorf("step(%q) in sequence: %w", clip(probe), err)
		}
		if res.Done {
			break
		}
	}
	return "", nil
}

// checkTrivial verifies that not every probe solves the env as the first action (from the
// smoke check's probe results). Never skipped.
func (c *checker) checkTrivial() (string, error) {
	for _, res := range c.probeResults {
		if !(res.Done && res.Success()) {
			return "", nil
		}
	}
	return "", errors.New("every probe action (empty, a number, a long string, garbage, the hint) solves the env at once: it is trivial")
}

// checkHintLeak verifies that the hint is not empty and that neither the hint text nor any
// number in it (hintLeakActions) solves the env as the first action after any reset seed.
// Never skipped.
func (c *checker) checkHintLeak() (string, error) {
	hint := c.opts.Hint
	if strings.TrimSpace(hint) == "" {
		return "", errors.New("the hint is empty")
	}
	for _, action := range hintLeakActions(hint) {
		for _, seed := range c.seeds {
			if _, err := c.env.Reset(c.ctx, seed); err != nil {
				return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
			}
			res, err := c.env.Step(c.ctx, action)
			if err != nil {
				return "", fmt.Errorf("step(%q): %w", clip(action), err)
			}
			if res.Done && res.Success() {
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

// checkToolsSchema verifies that tools() returns valid OpenAI function schemas
// (ValidateToolSchemas). Tools setting only; never skipped there.
func (c *checker) checkToolsSchema() (string, error) {
	raw, err := c.env.Tools(c.ctx)
	if err != nil {
		return "", err
	}
	c.toolsRaw = raw
	return "", ValidateToolSchemas(raw)
}

// checkToolsReset verifies that reset and tools() are deterministic across instances and seeds:
// each reset seed gives the same first observation (the instructions the screen reads) on the
// checked instance and a fresh one, and tools() there equals the schemas of tools_schema. Tools
// setting only; never skipped there.
func (c *checker) checkToolsReset() (string, error) {
	fresh, err := c.prog.NewEnv(c.ctx)
	if err != nil {
		return "", err
	}
	defer fresh.Close()
	for _, seed := range c.seeds {
		a, err := c.env.Reset(c.ctx, seed)
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
// instruction) after each reset seed. Tools setting only; skipped when the class defines no
// success_conditions().
func (c *checker) checkToolsConditions() (string, error) {
	for _, seed := range c.seeds {
		if _, err := c.env.Reset(c.ctx, seed); err != nil {
			return "", fmt.Errorf("reset(seed=%d): %w", seed, err)
		}
		raw, err := c.env.Eval(c.ctx, "success_conditions")
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
