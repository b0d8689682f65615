package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
)

// TestConfigKeysListsEveryKeyWithADoc: `spade config keys` prints every key of config.Keys with its type
// and a doc line, and a prefix narrows the list.
func TestConfigKeysListsEveryKeyWithADoc(t *testing.T) {
	env := localEnv(t)
	out := must(t, env, "config", "keys")
	listed := map[string]bool{}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := 0; i+2 < len(lines); i += 3 {
		key := strings.Fields(lines[i])[0]
		listed[key] = true
		if !strings.HasPrefix(lines[i+1], "    preset: ") || strings.TrimSpace(lines[i+2]) == "" {
			t.Errorf("key %s: want a preset line and a doc line, got %q / %q", key, lines[i+1], lines[i+2])
		}
	}
	for _, key := range config.Keys() {
		if !listed[key] {
			t.Errorf("config keys does not list %s", key)
		}
	}
	grpo := must(t, env, "config", "keys", "grpo.")
	if !strings.Contains(grpo, "grpo.tis ") || strings.Contains(grpo, "rollout.") {
		t.Errorf("config keys grpo. lists other families or lacks grpo.tis:\n%s", grpo)
	}
	one := must(t, env, "config", "keys", "rollout.token_io")
	if !strings.Contains(one, "one of chat | tokens") {
		t.Errorf("config keys rollout.token_io lacks its values:\n%s", one)
	}
	r := spade(t, env, "", "config", "keys", "rollout.nope")
	if r.code != 2 || !strings.Contains(r.stderr, `no key starts with "rollout.nope"`) {
		t.Errorf("unknown prefix: exit %d, %q", r.code, r.stderr)
	}
	help := must(t, env, "init", "--help")
	if !strings.Contains(help, "rollout.group_size") || !strings.Contains(help, "    preset: ") {
		t.Errorf("init --help lacks the generated key list:\n%.2000s", help)
	}
}

// TestConfigShowDiffAndYAMLInit: a run created from a YAML file (with --set on top) shows the file's
// values, `config show` round-trips through `init --config`, and `config diff` lists exactly the changed
// keys with both values.
func TestConfigShowDiffAndYAMLInit(t *testing.T) {
	env := localEnv(t)
	must(t, env, "--run", "a", "init", "--preset", "qwen3-8b-games")
	file := filepath.Join(t.TempDir(), "run.yaml")
	os.WriteFile(file, []byte("rollout:\n  group_size: 4\n  max_turns: 12\nregret.band_lo: 0.3\n"), 0o644)
	must(t, env, "--run", "b", "init", "--preset", "qwen3-8b-games", "--config", file, "--set", "rollout.max_turns=10")

	diff := must(t, env, "config", "diff", "a", "b")
	want := map[string][2]string{"regret.band_lo": {"0.4", "0.3"}, "rollout.group_size": {"8", "4"}, "rollout.max_turns": {"25", "10"}}
	lines := strings.Split(strings.TrimSpace(diff), "\n")
	if len(lines) != 1+len(want) || strings.Fields(lines[0])[0] != "key" {
		t.Fatalf("config diff a b:\n%s\nwant a header and %d keys", diff, len(want))
	}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if w, ok := want[f[0]]; !ok || len(f) != 3 || f[1] != w[0] || f[2] != w[1] {
			t.Errorf("diff line %q, want %s %v", line, f[0], want[f[0]])
		}
	}
	var doc struct {
		Changes []struct{ Key, A, B string }
	}
	if err := json.Unmarshal([]byte(must(t, env, "config", "diff", "--format", "json", "a", "b")), &doc); err != nil || len(doc.Changes) != len(want) {
		t.Errorf("config diff --format json: %v, %d changes", err, len(doc.Changes))
	}
	if same := must(t, env, "config", "diff", "a", "a"); !strings.Contains(same, "same configuration") {
		t.Errorf("diff of a run with itself: %q", same)
	}

	shown := must(t, env, "--run", "b", "config", "show")
	if !strings.Contains(shown, "group_size: 4") {
		t.Errorf("config show lacks group_size: 4:\n%.1000s", shown)
	}
	if local := must(t, env, "config", "show", "--run", "b"); local != shown {
		t.Error("config show --run b differs from spade --run b config show")
	}
	back := filepath.Join(t.TempDir(), "b.yaml")
	os.WriteFile(back, []byte(shown), 0o644)
	must(t, env, "--run", "c", "init", "--config", back)
	if d := must(t, env, "config", "diff", "b", "c"); !strings.Contains(d, "same configuration") {
		t.Errorf("a run created from b's config show differs from b:\n%s", d)
	}
	asJSON := must(t, env, "--run", "b", "config", "show", "--format", "json")
	if cfg, err := config.Parse([]byte(asJSON)); err != nil || cfg.Rollout.MaxTurns != 10 {
		t.Errorf("config show --format json does not parse back: %v", err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "diff", "a"}, "takes two runs"},
		{[]string{"config", "diff", "a", "nope"}, "nope"},
		{[]string{"--run", "nope", "config", "show"}, "nope"},
		{[]string{"config", "show", "--preset", "qwen3-1b-games"}, "unknown preset"},
		{[]string{"--run", "x", "init", "--set", "rollout.grup_size=8"}, `did you mean "rollout.group_size"`},
		{[]string{"--run", "x", "init", "--set", "llm.agent.temperature=-1"}, `"llm.agent.temperature"`},
		{[]string{"--run", "x", "init", "--set", "llm.agent.top_p=0"}, `"llm.agent.top_p"`},
	} {
		r := spade(t, env, "", tc.args...)
		if msg, ok := usageMessage(r.stderr); r.code != 2 || !ok || !strings.Contains(msg, tc.want) {
			t.Errorf("spade %s: exit %d, stderr %q; want exit 2 and one line naming %s", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
}

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated key table of docs/configuration.md")

// TestConfigurationDocListsEveryKey: docs/configuration.md's key table is what `spade config keys
// --format markdown` prints, so the reference a user reads is the one the code declares.
func TestConfigurationDocListsEveryKey(t *testing.T) {
	const begin, end = "<!-- keys:begin -->\n", "<!-- keys:end -->"
	path := repoFile("docs/configuration.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(doc), begin)
	_, tail, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("%s: no %q ... %q block", path, begin, end)
	}
	var table strings.Builder
	writeKeysMarkdown(&table, config.Describe())
	if *updateDocs {
		if err := os.WriteFile(path, []byte(head+begin+table.String()+end+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, _, _ := strings.Cut(rest, end)
	if got != table.String() {
		t.Errorf("%s: the key table is stale; rewrite it with go test ./cmd/spade -run TestConfigurationDocListsEveryKey -update-docs", path)
	}
	for _, key := range config.Keys() {
		if !strings.Contains(got, "| `"+key+"` |") {
			t.Errorf("%s: the key table lacks %s", path, key)
		}
	}
}
