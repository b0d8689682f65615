package main

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAnalyticsCommands drives synth, metrics, ablate and report through the binary: outputs, formats
// and the exit codes of wrong input.
func TestAnalyticsCommands(t *testing.T) {
	env := localEnv(t)
	for _, args := range [][]string{
		{"--run", "full", "synth", "--steps", "0-15"},
		{"--run", "nocorpus", "synth", "--steps", "0-15", "--variant", "no_corpus"},
	} {
		must(t, env, args...)
	}
	table := must(t, env, "--run", "full", "metrics")
	for _, want := range []string{"dashboard per 8-step window", "band_share", "quality audit", "early", "late", "longest runs"} {
		if !strings.Contains(table, want) {
			t.Errorf("metrics table lacks %q:\n%s", want, table)
		}
	}
	rows := analyticsCSV(t, must(t, env, "--run", "full", "metrics", "--format", "csv"))
	if len(rows) != 3 || rows[0][1] != "window_index" || rows[2][0] != "full" {
		t.Errorf("metrics csv: %v", rows)
	}
	band := analyticsCSV(t, must(t, env, "--run", "full", "metrics", "--format", "csv", "--model", "learnable_band"))
	if band[0][7] != "band_share" || band[1][4] != "12" { // quota: 6 envs × 2 pools per 8-step window
		t.Errorf("learnable_band csv: %v", band)
	}
	// The same model by hand: --sql-params, then the file, through spade query.
	params := must(t, env, "--run", "full", "metrics", "--sql-params")
	sqlText, err := os.ReadFile(repoFile("sql/learnable_band.sql"))
	if err != nil {
		t.Fatal(err)
	}
	r := spade(t, env, params+string(sqlText), "--run", "full", "query", "--format", "csv")
	if r.code != 0 || len(analyticsCSV(t, r.stdout)) != len(band) || analyticsCSV(t, r.stdout)[1][7] != band[1][7] {
		t.Errorf("by hand: exit %d %q %s (want %v)", r.code, r.stdout, r.stderr, band)
	}
	// The models are views of every spade query session, with the run's parameters (8-step windows here).
	plain := analyticsCSV(t, must(t, env, "--run", "full", "query", "--format", "csv", "select * from learnable_band"))
	if len(plain) != len(band) || plain[1][4] != "12" || plain[1][7] != band[1][7] {
		t.Errorf("spade query from learnable_band: %v (want %v)", plain, band)
	}
	if v := must(t, env, "--run", "full", "query", "--format", "csv",
		"select getvariable('metrics_window') as w, count(*) > 0 as ok from dashboard"); v != "w,ok\n8,true\n" {
		t.Errorf("spade query from dashboard: %q", v)
	}
	// Vendi in any spade query session.
	v := must(t, env, "--run", "full", "query", "--format", "csv",
		"select count(*) > 0 as ok, vendi(list(vector)) >= 1 as vendi_ok from embeddings")
	if v != "ok,vendi_ok\ntrue,true\n" {
		t.Errorf("vendi in spade query: %q", v)
	}
	cmp := analyticsCSV(t, must(t, env, "--run", "full", "--run", "nocorpus", "ablate", "--format", "csv", "--draws", "3"))
	if len(cmp) != 3 || cmp[0][3] != "vendi_per_n" || cmp[1][0] != "full" || cmp[2][0] != "nocorpus" {
		t.Errorf("ablate csv: %v", cmp)
	}
	rescore := analyticsCSV(t, must(t, env, "--run", "full", "ablate", "--rescore", "--format", "csv"))
	if len(rescore) != 6 || rescore[1][0] != "regret_anchor" || rescore[1][2] != "1" || rescore[5][0] != "regret_based" {
		t.Errorf("rescore csv: %v", rescore)
	}
	// The deployed variant's rescored reward of each pool's top env is the stored final reward.
	picks := analyticsCSV(t, must(t, env, "--run", "full", "ablate", "--rescore", "--picks", "--format", "csv"))
	stored := analyticsCSV(t, must(t, env, "--run", "full", "query", "--format", "csv",
		"select env_id, reward from designer_rewards where final and variant = 'regret_anchor'"))
	storedReward := map[string]string{}
	for _, r := range stored[1:] {
		storedReward[r[0]] = r[1]
	}
	checked := 0
	for _, r := range picks[1:] {
		if r[1] != "regret_anchor" {
			continue
		}
		checked++
		got, _ := strconv.ParseFloat(r[6], 64)
		want, err := strconv.ParseFloat(storedReward[r[2]], 64)
		if err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("pool %s top env %s: rescored %v, stored %q", r[0], r[2], got, storedReward[r[2]])
		}
	}
	if checked != 4 {
		t.Errorf("checked %d pools, want 4", checked)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	must(t, env, "--run", "full", "report", "--out", out)
	page, err := os.ReadFile(out)
	// the nine curriculum and cost charts, the Agent's solve rate and return with and without the
	// hint, and the Designer's reward (a synthetic run without --train has no training panels)
	if err != nil || strings.Count(string(page), `class="chart"`) != 12 {
		t.Errorf("report: %v, %d charts", err, strings.Count(string(page), `class="chart"`))
	}
	for _, bad := range [][]string{
		{"--run", "full", "metrics", "--format", "xml"},
		{"--run", "full", "metrics", "--model", "nope"},
		{"--run", "missing", "metrics"},
		{"--run", "full", "metrics", "--embedder", "word2vec"},
		{"--run", "full", "metrics", "--embedder", "openai"},
		{"--run", "x", "synth", "--size", "huge"},
		{"ablate"},
	} {
		if r := spade(t, env, "", bad...); r.code != 2 {
			t.Errorf("spade %v: exit %d, want 2 (%s)", bad, r.code, r.stderr)
		}
	}
}

func analyticsCSV(t *testing.T, text string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatalf("csv %q: %v", text, err)
	}
	return rows
}
