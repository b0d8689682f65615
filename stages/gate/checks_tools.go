package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

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
