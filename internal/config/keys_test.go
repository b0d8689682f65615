package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestRanges: every declared range lets its bounds in or keeps them out as written, and Validate's error
// names the key and the range.
func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		key     string
		in, out []string
		rng     string
	}{
		{"llm.agent.temperature", []string{"0", "0.6", "2"}, []string{"-1", "-0.001"}, ">= 0"},
		{"llm.designer.top_p", []string{"1e-9", "0.95", "1"}, []string{"0", "1.0000001", "-0.5"}, "(0, 1]"},
		{"llm.screen.top_k", []string{"0", "20"}, []string{"-1"}, ">= 0"},
		{"llm.agent.max_tokens", []string{"1"}, []string{"0"}, ">= 1"},
		{"llm.max_in_flight", []string{"0", "1"}, []string{"-1"}, ">= 0"},
		{"llm.server_max_in_flight", []string{"1"}, []string{"0"}, ">= 1"},
		{"llm.timeout_seconds", []string{"1"}, []string{"0", "-5"}, "> 0"},
		{"llm.max_retries", []string{"0"}, []string{"-1"}, ">= 0"},
		{"sandbox.workers", []string{"0", "8"}, []string{"-1"}, ">= 0"},
		{"sandbox.step_timeout_seconds", []string{"1"}, []string{"0"}, "> 0"},
		{"sample.envs_per_step", []string{"1"}, []string{"0"}, ">= 1"},
		{"sample.skills_per_window", []string{"1", "6"}, []string{"0", "7"}, "[1, 6]"},
		{"sample.excerpt_words", []string{"0"}, []string{"-1"}, ">= 0"},
		{"rollout.group_size", []string{"1"}, []string{"0"}, ">= 1"},
		{"rollout.hinted_group_size", []string{"0"}, []string{"-1"}, ">= 0"},
		{"gate.max_attempts", []string{"1"}, []string{"0"}, ">= 1"},
		{"regret.weight_regret", []string{"0", "1"}, []string{"-0.1", "1.1"}, "[0, 1]"},
		{"regret.ema_fast", []string{"1", "0.001"}, []string{"0", "1.5"}, "(0, 1]"},
		{"regret.scale", []string{"0"}, []string{"-0.01"}, ">= 0"},
		{"metrics.band_lo", []string{"0"}, []string{"-0.01"}, "[0, 1]"},
		{"metrics.band_hi", []string{"1"}, []string{"1.01"}, "[0, 1]"},
		{"grpo.clip_low", []string{"0", "0.999"}, []string{"1", "-0.1"}, "[0, 1)"},
		{"grpo.adam_beta2", []string{"0", "0.98"}, []string{"1"}, "[0, 1)"},
		{"grpo.lr", []string{"1e-9"}, []string{"0", "-1e-6"}, "> 0"},
		{"grpo.tis_cap", []string{"0.5"}, []string{"0"}, "> 0"},
		{"grpo.max_grad_norm", []string{"0"}, []string{"-1"}, ">= 0"},
		{"memory.capacity", []string{"0"}, []string{"-1"}, ">= 0"},
		{"eval.top_p", []string{"0", "1"}, []string{"1.5"}, "[0, 1]"},
		{"eval.every", []string{"0"}, []string{"-1"}, ">= 0"},
	} {
		info, ok := KeyDoc(tc.key)
		if !ok || info.Range != tc.rng {
			t.Errorf("%s: range %q, want %q", tc.key, info.Range, tc.rng)
		}
		for _, v := range tc.in {
			c := Default()
			if err := c.Set(tc.key, v); err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("%s=%s is in %s but Validate() = %v", tc.key, v, tc.rng, err)
			}
		}
		for _, v := range tc.out {
			c := Default()
			if err := c.Set(tc.key, v); err != nil {
				t.Fatal(err)
			}
			phrase := tc.rng
			if strings.ContainsAny(tc.rng, "[(") {
				phrase = "in " + tc.rng
			}
			want := `config: key "` + tc.key + `" must be ` + phrase + "; got "
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s=%s is outside %s: Validate() = %v, want %q...", tc.key, v, tc.rng, err, want)
			}
		}
	}
}

// TestEveryNumberHasARange: every numeric key declares its range, the seed aside (any int64 seeds).
func TestEveryNumberHasARange(t *testing.T) {
	for _, info := range Describe() {
		if (info.Type == "integer" || info.Type == "number") && info.Range == "" && info.Key != "seed" {
			t.Errorf("key %s (%s) declares no range tag", info.Key, info.Type)
		}
	}
}

func TestParseRange(t *testing.T) {
	for tag, want := range map[string]string{">=1": ">= 1", ">0": "> 0", "<=10": "<= 10", "<2.5": "< 2.5",
		"[0,1]": "[0, 1]", "(0,1]": "(0, 1]", "[0, 1)": "[0, 1)", "(-1,1)": "(-1, 1)", "": ""} {
		r, err := parseRange(tag)
		if err != nil || r.String() != want {
			t.Errorf("parseRange(%q) = %q, %v; want %q", tag, r.String(), err, want)
		}
	}
	for _, bad := range []string{"1", ">=x", "[1,0]", "[0;1]", "(0,1", "=>1"} {
		if _, err := parseRange(bad); err == nil {
			t.Errorf("parseRange(%q) accepted a malformed tag", bad)
		}
	}
}

// TestUnknownKeysSuggest: an unknown key's error names the key, the likely key or keys, and where to
// look; a group or a key below a key says so.
func TestUnknownKeysSuggest(t *testing.T) {
	for key, want := range map[string]string{
		"rollout.grup_size": `config: unknown key "rollout.grup_size" (did you mean "rollout.group_size"?); spade config keys lists every key`,
		"rollout.groupsize": `(did you mean "rollout.group_size"?)`,
		"grpo.group_size":   `(did you mean "rollout.group_size"?)`,
		"rollout.max_turn":  `(did you mean "rollout.max_turns"?)`,
		"Rollout.Max_Turns": `(did you mean "rollout.max_turns"?)`,
		"llm.agnet.top_p":   `(did you mean "llm.agent.top_p"?)`,
		"llm.temperature":   `(did you mean "eval.temperature", "llm.agent.temperature" or "llm.screen.temperature"?)`,
		"frobnicate":        `config: unknown key "frobnicate"; spade config keys lists every key`,
		"rollout":           `config: unknown key "rollout": it is a group of keys (spade config keys rollout lists them)`,
		"seed.low":          `config: unknown key "seed.low": "seed" is a key of its own (an integer), not a group`,
	} {
		err := Default().Set(key, "1")
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Set(%q) = %v, want %q", key, err, want)
		}
	}
}

// TestErrorsWrapErrInvalid: every input error of the package's entry points is an ErrInvalid, and a
// failing Merge leaves the config as it was.
func TestErrorsWrapErrInvalid(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	c := Default()
	for what, err := range map[string]error{
		"Set unknown":        c.Set("nope", "1"),
		"Set type":           c.Set("seed", "one"),
		"Set non-finite":     c.Set("grpo.lr", "NaN"),
		"Merge":              c.Merge([]byte(`{"seed": "1"}`)),
		"Merge syntax":       c.Merge([]byte(`{"seed": `)),
		"MergeYAML":          c.MergeYAML([]byte("seed: [1]\n")),
		"LoadFile missing":   c.LoadFile(filepath.Join(dir, "none.yaml")),
		"LoadFile extension": c.LoadFile(write("run.toml", "seed = 1\n")),
		"LoadFile content":   c.LoadFile(write("bad.yml", "sed: 1\n")),
		"Parse":              func() error { _, err := Parse([]byte(`{"seed": true}`)); return err }(),
		"Preset":             func() error { _, err := Preset("qwen3-2b-games"); return err }(),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v does not wrap ErrInvalid", what, err)
		}
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Error("failed calls changed the config")
	}
	if err := c.LoadFile(filepath.Join(dir, "run.toml")); err == nil || !strings.Contains(err.Error(), ".json, .yaml or .yml") {
		t.Errorf("LoadFile of a .toml = %v, want the extensions it reads", err)
	}
	before := *c
	err := c.Merge([]byte(`{"rollout.group_size": 3, "rollout.max_turns": "many"}`))
	if err == nil || c.Rollout.GroupSize != before.Rollout.GroupSize {
		t.Errorf("a failed Merge (%v) applied its first key: group_size %d", err, c.Rollout.GroupSize)
	}
	if err := c.Merge([]byte(`{"rollout": {"group_size": 3}, "rollout.group_size": 4}`)); err == nil ||
		!strings.Contains(err.Error(), `key "rollout.group_size" is given twice`) {
		t.Errorf("Merge of a key given twice = %v", err)
	}
	if err := c.Merge([]byte(`{"rollout": {}, "seed": 5}`)); err != nil || c.Seed != 5 {
		t.Errorf("Merge with an empty group = %v, seed %d", err, c.Seed)
	}
	if err := c.Merge([]byte(`{"seed": {"a": 1}}`)); err == nil || !strings.Contains(err.Error(), `"seed" is a key of its own`) {
		t.Errorf("Merge of an object under a key = %v", err)
	}
}

// TestDiff: two configs that differ in three keys give those three changes, sorted by key, with both
// values as Get writes them; a parent counts as the key "parent".
func TestDiff(t *testing.T) {
	a, b := Default(), Default()
	if d := Diff(a, b); len(d) != 0 {
		t.Fatalf("Diff of equal configs = %v", d)
	}
	b.Rollout.GroupSize, b.GRPO.LR, b.Setting = 4, 2e-6, "tools"
	want := []Change{{"grpo.lr", "1e-06", "2e-06"}, {"rollout.group_size", "8", "4"}, {"setting", "games", "tools"}}
	if got := Diff(a, b); !slices.Equal(got, want) {
		t.Errorf("Diff = %v, want %v", got, want)
	}
	b = Default()
	b.Parent, b.Preset = &Parent{Run: "r1", Step: 199}, "qwen3-4b-games"
	want = []Change{{"parent", "", "r1@199"}, {"preset", "qwen3-30b-a3b-games", "qwen3-4b-games"}}
	if got := Diff(a, b); !slices.Equal(got, want) {
		t.Errorf("Diff of a child run = %v, want %v", got, want)
	}
}

// TestDescribe: every key is described once, sorted, with its type and, for an enum, its values.
func TestDescribe(t *testing.T) {
	infos := Describe()
	var keys []string
	for _, info := range infos {
		keys = append(keys, info.Key)
	}
	if !slices.Equal(keys, Keys()) {
		t.Fatalf("Describe lists %d keys, Keys %d", len(keys), len(Keys()))
	}
	for key, want := range map[string]KeyInfo{
		"rollout.group_size": {Key: "rollout.group_size", Type: "integer", Range: ">= 1"},
		"rollout.token_io":   {Key: "rollout.token_io", Type: "enum", Values: []string{"chat", "tokens"}},
		"grpo.lr":            {Key: "grpo.lr", Type: "number", Range: "> 0"},
		"llm.agent.model":    {Key: "llm.agent.model", Type: "string"},
		"ablation.no_memory": {Key: "ablation.no_memory", Type: "bool"},
	} {
		got, ok := KeyDoc(key)
		if got.Doc == "" {
			t.Errorf("%s has no doc", key)
		}
		got.Doc = ""
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("KeyDoc(%s) = %+v, want %+v", key, got, want)
		}
	}
	if _, ok := KeyDoc("rollout"); ok {
		t.Error("KeyDoc of a group is a key")
	}
	for doc, want := range map[string]string{
		"The number of plays. More here.":              "The number of plays.",
		"A count (e.g. 3. or more) of things. Next.":   "A count (e.g. 3. or more) of things.",
		`The template, e.g. "a. b" here. Next.`:        `The template, e.g. "a. b" here.`,
		"No full stop at all":                          "No full stop at all",
		"Drives every choice (seeds, draws) of a run.": "Drives every choice (seeds, draws) of a run.",
	} {
		if got := (KeyInfo{Doc: doc}).Summary(); got != want {
			t.Errorf("Summary(%q) = %q, want %q", doc, got, want)
		}
	}
}

// TestTestdataRunConfigsParse: every run.json of the repository's testdata still parses and validates.
func TestTestdataRunConfigsParse(t *testing.T) {
	var found int
	err := filepath.WalkDir(filepath.Join("..", "..", "testdata"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "run.json" {
			return err
		}
		found++
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := Parse(body); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		return nil
	})
	if err != nil || found == 0 {
		t.Fatalf("walk testdata: %v (%d run.json)", err, found)
	}
}
