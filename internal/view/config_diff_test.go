package view

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/laketest"
)

// TestConfigDiffEndpoint creates two runs beside the demo run, one with three keys changed, and checks
// that /api/config/diff lists exactly those keys with each run's value, and nothing for equal runs.
func TestConfigDiffEndpoint(t *testing.T) {
	lk, _ := synthLake(t, 1)
	base, err := config.Preset("qwen3-8b-games")
	if err != nil {
		t.Fatal(err)
	}
	changed, _ := config.Preset("qwen3-8b-games")
	for key, value := range map[string]string{"rollout.group_size": "4", "regret.band_lo": "0.2", "llm.agent.temperature": "1"} {
		if err := changed.Set(key, value); err != nil {
			t.Fatal(err)
		}
	}
	for name, cfg := range map[string]*config.Config{"a": base, "b": changed, "c": base} {
		laketest.NewRun(t, lk, name, cfg)
	}
	ts := startServer(t, lk, Options{})

	got := get(t, ts, "/api/config/diff?run=a&run=b", 200)
	changes, _ := got["changes"].([]any)
	want := map[string][2]string{"llm.agent.temperature": {"0.6", "1"}, "regret.band_lo": {"0.4", "0.2"}, "rollout.group_size": {"8", "4"}}
	if len(changes) != len(want) {
		t.Fatalf("changes = %v, want the keys of %v", changes, want)
	}
	for _, c := range changes {
		ch := c.(map[string]any)
		key := ch["key"].(string)
		values := ch["values"].([]any)
		w, ok := want[key]
		if !ok || len(values) != 2 || values[0] != w[0] || values[1] != w[1] {
			t.Errorf("change %s = %v, want %v", key, values, w)
		}
	}

	three := get(t, ts, "/api/config/diff?run=a&run=b&run=c", 200)
	for _, c := range three["changes"].([]any) {
		ch := c.(map[string]any)
		values := ch["values"].([]any)
		if len(values) != 3 || values[2] != values[0] {
			t.Errorf("three runs: %s = %v, want run c equal to run a", ch["key"], values)
		}
	}
	if same := get(t, ts, "/api/config/diff?run=a&run=c", 200); len(same["changes"].([]any)) != 0 {
		t.Errorf("equal runs: changes = %v, want none", same["changes"])
	}
	get(t, ts, "/api/config/diff?run=a", 400)
	get(t, ts, "/api/config/diff?run=a&run=nope", 404)
}

// TestBrowserCompareShowsConfigDiff opens the compare page of two runs in headless Chromium: its
// configuration table must list the changed key with both runs' values.
func TestBrowserCompareShowsConfigDiff(t *testing.T) {
	b := newBrowser(t)
	lk, _ := synthLake(t, 1)
	base, _ := config.Preset("qwen3-4b-games")
	changed, _ := config.Preset("qwen3-4b-games")
	if err := changed.Set("rollout.max_turns", "7"); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*config.Config{"left": base, "right": changed} {
		laketest.NewRun(t, lk, name, cfg)
	}
	ts := startServer(t, lk, Options{})
	var row string
	err := chromedp.Run(b.ctx,
		chromedp.Navigate(ts.URL+"/compare?run=left&run=right"), wait("compare"),
		chromedp.WaitVisible(`table.config-diff tbody tr`, chromedp.ByQuery),
		chromedp.Text(`table.config-diff tbody`, &row, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(row)
	if len(fields) != 3 || fields[0] != "rollout.max_turns" || fields[1] != "25" || fields[2] != "7" {
		t.Errorf("config diff table reads %q, want rollout.max_turns 25 7", row)
	}
	b.check(t)
}
