package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestYAMLRoundTrip: for every preset, YAML() read back by LoadFile over another preset gives an equal
// config, strings that read as other YAML types and a multi-line template included.
func TestYAMLRoundTrip(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://llm.example:8000/v1")
	dir := t.TempDir()
	for i, name := range PresetNames() {
		c, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			c.Rollout.TokenIOTemplate = qwen3TokenIOTemplate
			c.LLM.Screen.Model, c.GRPO.DesignerAdvScale, c.GRPO.PublishCommand = "yes", "32", "null"
			c.Sample.Skills, c.Seed, c.GRPO.LR = "optimization, math_reasoning", -7, 3e-7
		}
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, c.YAML(), 0o644); err != nil {
			t.Fatal(err)
		}
		other, _ := Preset(PresetNames()[(i+1)%len(PresetNames())])
		if err := other.LoadFile(path); err != nil {
			t.Fatalf("%s: LoadFile(YAML()) = %v\n%s", name, err, c.YAML())
		}
		if !reflect.DeepEqual(other, c) {
			t.Errorf("%s: YAML round trip differs: %v", name, Diff(c, other))
		}
	}
}

// TestYAMLIsNestedLikeJSON: YAML() holds the groups and keys of JSON(), in the same (struct) order and
// nesting, a child run's parent included.
func TestYAMLIsNestedLikeJSON(t *testing.T) {
	c := Default()
	c.Parent = &Parent{Run: "r1", Step: 3}
	var fromJSON, fromYAML []string
	for _, m := range regexp.MustCompile(`(?m)^  ( *)"([a-z_]+)":`).FindAllStringSubmatch(string(c.JSON()), -1) {
		fromJSON = append(fromJSON, m[1]+m[2])
	}
	for _, m := range regexp.MustCompile(`(?m)^( *)([a-z_]+):`).FindAllStringSubmatch(string(c.YAML()), -1) {
		fromYAML = append(fromYAML, m[1]+m[2])
	}
	if len(fromJSON) < len(Keys()) || !slices.Equal(fromYAML, fromJSON) {
		t.Errorf("YAML keys\n%v\nJSON keys\n%v", fromYAML, fromJSON)
	}
}

// TestYAMLStrictTypes: YAML values are checked by their YAML type: no string for a number, no number
// for a string, true and false the only booleans; errors name the key and the line.
func TestYAMLStrictTypes(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"rollout:\n  group_size: \"4\"\n", `line 2: config: key "rollout.group_size" wants an integer, got the string "4"`},
		{"rollout.group_size: 4.5\n", `key "rollout.group_size" wants an integer, got the number 4.5`},
		{"rollout.paired_seeds: yes\n", `key "rollout.paired_seeds" wants true or false, got the string "yes"`},
		{"rollout.paired_seeds: 1\n", `key "rollout.paired_seeds" wants true or false, got the number 1`},
		{"grpo.designer_adv_scale: 32\n", `key "grpo.designer_adv_scale" wants a string, got the number 32 (write it in quotes for the text)`},
		{"llm.agent.model: true\n", `key "llm.agent.model" wants a string, got true (write it in quotes for the text)`},
		{"llm.agent.model: 2024-01-01\n", `key "llm.agent.model" wants a string, got the timestamp "2024-01-01"`},
		{"setting: 1\n", `key "setting" wants one of games, tools, got the number 1`},
		{"rollout.group_size: ~\n", `key "rollout.group_size" wants an integer, got null`},
		{"rollout.group_size:\n", `key "rollout.group_size" wants an integer, got null`},
		{"rollout.group_size: [1, 2]\n", `key "rollout.group_size" wants an integer, got a list`},
		{"grpo.lr: .inf\n", `key "grpo.lr" wants a finite number, got "+Inf"`},
		{"rollout:\n  grup_size: 4\n", `line 2: config: unknown key "rollout.grup_size" (did you mean "rollout.group_size"?)`},
		{"rollout:\n  group_size: 4\nrollout.group_size: 5\n", `line 3: config: key "rollout.group_size" is given twice`},
		{"seed: 1\nseed: 2\n", `key "seed" is given twice`},
		{"seed: 1\n---\nseed: 2\n", "more than one document"},
		{"- seed\n", "not a YAML mapping of keys"},
		{"<<: {seed: 1}\n", "merge keys"},
		{"seed: [1\n", "invalid YAML"},
		{"parent:\n  run: r1\n", `unknown key "parent.run": a run's parent is not a key (only spade init --from RUN@STEP sets it)`},
	} {
		c := Default()
		err := c.MergeYAML([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("MergeYAML(%q) = %v, want %q", tc.doc, err, tc.want)
		}
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("MergeYAML(%q) failed but changed the config", tc.doc)
		}
	}
	c := Default()
	doc := "llm.agent.model: yes\ngrpo.designer_adv_scale: \"32\"\ngrpo:\n  lr: 1e-6\n  tis_cap: 3\nseed: 0x10\n" +
		"rollout:\n  group_size: &n 4\n  max_turns: *n\n  paired_seeds: true\nsample.skills: !!str 12\n"
	if err := c.MergeYAML([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	got := [8]any{c.LLM.Agent.Model, c.GRPO.DesignerAdvScale, c.GRPO.LR, c.GRPO.TISCap, c.Seed, c.Rollout.GroupSize, c.Rollout.MaxTurns, c.Sample.Skills}
	if want := [8]any{"yes", "32", 1e-6, 3.0, int64(16), 4, 4, "12"}; got != want || !c.Rollout.PairedSeeds {
		t.Errorf("MergeYAML gave %v, want %v", got, want)
	}
	if err := c.MergeYAML(nil); err != nil {
		t.Errorf("an empty YAML document: %v", err)
	}
}
