// Package config is the run configuration (docs/architecture.md, "Run configuration"): presets with the
// values of the authors' launch scripts, dotted keys (`rollout.group_size`), and strict parsing: an
// unknown key or a value of the wrong type is an error that names the key. A run's config is written once
// to run.json by `spade init` and never changed.
//
// Each key family has one file (sample.go, llm.go, ..., eval.go) that holds its struct, a doc comment on
// every field (the key's documentation: keydocs_gen.go is generated from these comments), the field's
// allowed range as a `range` struct tag, the family's enum types, its cross-key checks (validate) and its
// preset values. keys.go is the dotted-key machinery shared by every family.
package config

//go:generate go run gen_keydocs.go

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spadekit/spade/schemas"
)

// ErrInvalid is wrapped by every error of Set, Merge, MergeYAML, LoadFile, Validate and Parse that says
// the input is wrong (an unknown key, a value of the wrong type, out of range or not one of an enum's
// values, a config file that does not parse or does not exist); the CLI maps it to a usage error.
var ErrInvalid = errors.New("config: invalid configuration")

// invalidError is an error of the input: one line for the user, matching ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// SplitList returns the items of a comma-separated key value (eval.benches, grpo.publish_urls,
// outcome.exclude_ended_by), each trimmed of surrounding space, in order; empty items are left out, so
// "a, ,b," gives [a b] and an empty or all-blank value gives nil.
func SplitList(value string) []string {
	var items []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// invalidf returns an error that wraps ErrInvalid with a formatted message.
func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// Config is a run's whole configuration. Field json tags are the dotted keys' segments; a field's doc
// comment is its key's documentation and its `range` tag the values Validate allows.
type Config struct {
	// Preset names the preset the run started from (spade init --preset). A key that a run.json lacks
	// takes its value in this preset.
	Preset string `json:"preset"`
	// Seed drives every random choice of the run. It seeds the skill rotation, the document draw, the
	// envs' reset seeds, the memory draw and the sampling seed of each model call.
	Seed int64 `json:"seed"`
	// Setting is the kind of environments the Designer writes: games or tools. games are text games
	// played by actions; tools are tool-use tasks answered with tool calls.
	Setting schemas.Setting `json:"setting"`
	// Sample is the pool schedule and the corpus draw (sample.go).
	Sample Sample `json:"sample"`
	// LLM is the model behind each role (llm.go).
	LLM LLM `json:"llm"`
	// Sandbox is the execution of generated programs (sandbox.go).
	Sandbox Sandbox `json:"sandbox"`
	// Gate is the acceptance checks (gate.go).
	Gate Gate `json:"gate"`
	// Rollout is the Agent's episodes (rollout.go).
	Rollout Rollout `json:"rollout"`
	// Regret is the Designer's reward (regret.go).
	Regret Regret `json:"regret"`
	// Memory is the environment memory shown to the Designer (memory.go).
	Memory Memory `json:"memory"`
	// Generate is the Designer's calls and the hint writer (generate.go).
	Generate Generate `json:"generate"`
	// Ablation is the paper's ablation switches (ablation.go).
	Ablation Ablation `json:"ablation"`
	// GRPO is batch assembly and the trainer (grpo.go).
	GRPO GRPO `json:"grpo"`
	// Metrics is the audits (metrics.go).
	Metrics Metrics `json:"metrics"`
	// Outcome is the one definition of an episode's outcome (outcome.go).
	Outcome Outcome `json:"outcome"`
	// Eval is the downstream evaluation (eval.go).
	Eval Eval `json:"eval"`
	// Slurm is the resources of the jobs `spade run --executor slurm` submits (slurm.go).
	Slurm Slurm `json:"slurm"`
	// Parent is set on a child run (`spade init --from RUN@STEP`): the run and step whose lake state the
	// child inherited. It is not a key: only --from sets it.
	Parent *Parent `json:"parent,omitempty" key:"-"`
}

func init() { registerEnum(schemas.SettingValues()) }

// Parent names the run and the step a child run continues from.
type Parent struct {
	// Run is the parent run's name.
	Run string `json:"run"`
	// Step is the parent's last step the child inherited; the child continues at Step+1.
	Step int64 `json:"step"`
}

// String returns the parent as RUN@STEP, the form `spade init --from` takes.
func (p Parent) String() string { return p.Run + "@" + strconv.FormatInt(p.Step, 10) }

// family is one key family: the checks across its keys (and those that name one of its keys while
// reading another family's) that a declared range cannot express.
type family interface {
	validate(c *Config) error
}

// families returns every key family of c, in the order Validate checks them.
func (c *Config) families() []family {
	return []family{c.Sample, c.LLM, c.Sandbox, c.Gate, c.Rollout, c.Regret, c.Memory, c.Generate, c.Ablation,
		c.GRPO, c.Metrics, c.Outcome, c.Eval, c.Slurm}
}

// Validate checks what a single Set cannot: every enum key holds one of its values, every number is in
// its key's declared range, then each family's rules across keys (for example band_lo <= band_hi). The
// error wraps ErrInvalid, names the key and says what is allowed: an enum's values or the range.
func (c *Config) Validate() error {
	if err := c.validateEnums(); err != nil {
		return err
	}
	if err := c.validateRanges(); err != nil {
		return err
	}
	for _, f := range c.families() {
		if err := f.validate(c); err != nil {
			return err
		}
	}
	return nil
}

// JSON returns the config as indented JSON (the run.json body).
func (c *Config) JSON() []byte {
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}

// Parse reads a run.json body strictly, with Merge's rules (unknown keys and values of the wrong type
// are errors naming the key; "parent" is read as the child run's Parent), and validates it. A key
// missing from the body (a run created before the key existed) takes its default: the body is read over
// its preset (the default preset when the body names none or an unknown one).
func Parse(doc []byte) (*Config, error) {
	entries, err := flattenJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	preset := ""
	var keys, parent []entry
	for _, e := range entries {
		switch {
		case e.key == "parent" || strings.HasPrefix(e.key, "parent."):
			parent = append(parent, e)
		default:
			if e.key == "preset" && e.kind == kindString {
				preset = e.text
			}
			keys = append(keys, e)
		}
	}
	c, err := Preset(preset)
	if err != nil {
		c = Default()
	}
	if err := c.apply(keys); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	if c.Parent, err = parseParent(parent); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	return c, nil
}

// parseParent reads the "parent" object of a run.json (its entries parent.run and parent.step); no
// entries, or parent null, is no parent.
func parseParent(entries []entry) (*Parent, error) {
	if len(entries) == 0 || len(entries) == 1 && entries[0].key == "parent" && entries[0].kind == kindNull {
		return nil, nil
	}
	p := &Parent{}
	for _, e := range entries {
		switch e.key {
		case "parent.run":
			if e.kind != kindString {
				return nil, e.typeError("a string")
			}
			p.Run = e.text
		case "parent.step":
			step, err := strconv.ParseInt(e.text, 10, 64)
			if e.kind != kindInt || err != nil {
				return nil, e.typeError("an integer")
			}
			p.Step = step
		default:
			return nil, invalidf("config: unknown key %q (a parent holds run and step; only spade init --from sets it)", e.key)
		}
	}
	if p.Run == "" {
		return nil, invalidf("config: key \"parent.run\" is empty: a child run names its parent")
	}
	return p, nil
}

// Change is a key whose values differ between two configs, as text (Get's format).
type Change struct{ Key, A, B string }

// Diff returns every key whose value differs between a and b, sorted by key: every key of Keys (preset
// and seed included) and the parent, compared as "parent" with the text RUN@STEP ("" for no parent).
func Diff(a, b *Config) []Change {
	var out []Change
	for _, key := range Keys() {
		va, _ := a.Get(key)
		vb, _ := b.Get(key)
		if va != vb {
			out = append(out, Change{Key: key, A: va, B: vb})
		}
	}
	if pa, pb := parentText(a.Parent), parentText(b.Parent); pa != pb {
		out = append(out, Change{Key: "parent", A: pa, B: pb})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// parentText is a parent as RUN@STEP, or "" for none.
func parentText(p *Parent) string {
	if p == nil {
		return ""
	}
	return p.String()
}
