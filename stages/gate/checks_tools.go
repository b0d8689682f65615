package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/internal/sandbox"
)

// Screen asks a model whether some chain of tool calls reaches each instruction's success
// condition (the tools setting's LLM screen). It returns one verdict per instruction and a
// short reason for any "no".
type Screen interface {
	Screen(ctx context.Context, code string, tools json.RawMessage, instructions []string) (reachable []bool, reason string, err error)
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
	if _, authors := c.opts.Screen.(*ValidatorScreen); authors || c.authorsTools() {
		for _, ok := range reachable {
			if !ok {
				return "", fmt.Errorf("the validator model found a success condition that no tool chain reaches: %s", reason)
			}
		}
		return "", nil
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

// resetGateSeeds are the seeds the authors' reset gate resets a program with, fixed and public.
var resetGateSeeds = []int64{0, 1, 2}

// resetGateProbe is the method of the sandbox's ToolUseBaseEnv that evaluates an instance's
// _message_criteria on its _state: null when the instance has no criteria (or no state), else whether
// one of them raises.
const resetGateProbe = "_spade_reset_gate_probe"

// checkResetGate is the authors' reset gate (their tools scripts turn it on): on a fresh instance per
// seed of resetGateSeeds, validated as their loader validates it (play.Validate) and reset with the
// seed, every success criterion the program lists in self._message_criteria is called on self._state;
// the program is refused when, at every seed where this could run, one of them raised: that step can
// never be completed, whatever the data. A program without criteria (or without state), a seed whose
// instance fails to load or validate, and a program that raises while its criteria are read pass, as
// they do in theirs. Official tools checks under gate.tools_checks authors; skipped at step 0, where
// the authors skip it (the first pool has no earlier one to fall back on).
func (c *checker) checkResetGate() (string, error) {
	if c.opts.Step <= 0 {
		return "the first pool's step (the authors' reset gate runs from the second pool on)", nil
	}
	checked, raised := 0, 0
	for _, seed := range resetGateSeeds {
		verdict, ran, err := c.resetGateSeed(seed)
		if err != nil {
			return "", err
		}
		if !ran {
			continue
		}
		if verdict == nil {
			return "", nil // not a program whose steps are gated by criteria
		}
		checked++
		if *verdict {
			raised++
		}
	}
	if checked > 0 && raised == checked {
		return "", fmt.Errorf("a success criterion in self._message_criteria raises on the state reset builds at every seed tried (%v): that step can never be completed", resetGateSeeds[:checked])
	}
	return "", nil
}

// resetGateSeed runs the reset gate at one seed: verdict is nil for a program without criteria or
// state, else whether a criterion raised; ran is false when the seed's instance did not load or
// validate (the seed is left out). err is what no program causes (a deadline, memory, a crash).
func (c *checker) resetGateSeed(seed int64) (verdict *bool, ran bool, err error) {
	env, err := c.freshEnv()
	if err != nil {
		if programRaised(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	defer env.Close()
	if err := play.Validate(c.ctx, env); err != nil {
		if programRaised(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if _, err := env.Reset(c.ctx, seed); err != nil && !programRaised(err) {
		return nil, false, err // (their wrapper's reset absorbs what the program raises; the state stays as it is)
	}
	raw, err := env.Eval(c.ctx, resetGateProbe)
	switch {
	case missingMethod(err, resetGateProbe), programRaised(err):
		return nil, true, nil // no base class, or reading the criteria raised: their gate lets it pass
	case err != nil:
		return nil, false, err
	}
	var v *bool
	if json.Unmarshal(raw, &v) != nil {
		return nil, true, nil
	}
	return v, true, nil
}
