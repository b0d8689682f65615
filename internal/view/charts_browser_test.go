package view

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/synth"
)

// layoutCheck runs in the page: for every chart, a visible mark, no text past the chart's edge, no two
// texts (ticks, labels) overlapping, no two legend items overlapping, evenly spaced x ticks and short
// rounded tick labels; for the runs table, that it fits its container and no run name wraps.
const layoutCheck = `(() => {
  const bad = [];
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const charts = [...document.querySelectorAll('.chart')];
  const names = [];
  for (const c of charts) {
    const name = c.dataset.chart, svg = c.querySelector('svg');
    names.push(name);
    if (!svg) { bad.push(name + ': no chart drawn'); continue; }
    const box = svg.getBoundingClientRect();
    const marks = [...svg.querySelectorAll('path.mark, polyline.series')].filter(m => { const r = m.getBBox(); return r.width > 0 || r.height > 0; });
    if (!marks.length) bad.push(name + ': no mark');
    const texts = [...svg.querySelectorAll('text')].map(e => [e.textContent, e.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
    for (const [t, r] of texts) {
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) bad.push(name + ': text cut at the edge: ' + t);
    }
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      if (hit(texts[i][1], texts[j][1])) bad.push(name + ': texts overlap: ' + texts[i][0] + ' / ' + texts[j][0]);
    }
    const legend = [...c.querySelectorAll('.legend-item')].map(e => e.getBoundingClientRect());
    for (let i = 0; i < legend.length; i++) for (let j = i + 1; j < legend.length; j++) if (hit(legend[i], legend[j])) bad.push(name + ': legend items overlap');
    const xs = [...svg.querySelectorAll('text.tick.x')].map(e => Number(e.getAttribute('x')));
    for (let i = 2; i < xs.length; i++) if (Math.abs((xs[i] - xs[i - 1]) - (xs[1] - xs[0])) > 0.2) bad.push(name + ': uneven x ticks ' + xs.join(' '));
    for (const e of svg.querySelectorAll('text.tick')) {
      if (!/^-?\d{1,4}(\.\d{1,4})?([kMG]|e-\d+)?$/.test(e.textContent)) bad.push(name + ': tick label ' + e.textContent);
    }
  }
  const table = document.querySelector('table[data-table=runs]');
  if (table) {
    const wrap = table.parentElement;
    if (table.scrollWidth > wrap.clientWidth + 1) bad.push('the runs table is wider than the page: ' + table.scrollWidth + ' > ' + wrap.clientWidth);
    if (wrap.getBoundingClientRect().right > document.documentElement.clientWidth + 1) bad.push('the runs table runs past the window');
    for (const a of table.querySelectorAll('td.name a')) if (a.getClientRects().length > 1) bad.push('run name wraps: ' + a.textContent);
  }
  return JSON.stringify({ charts: names, bad });
})()`

type layout struct {
	Charts []string `json:"charts"`
	Bad    []string `json:"bad"`
}

// checkLayout opens path, waits for page and returns the page's layout check (failing on any problem).
func checkLayout(t *testing.T, b *browserSession, base, path, page, dir, shotName string) layout {
	t.Helper()
	var raw string
	if err := chromedp.Run(b.ctx, chromedp.Navigate(base+path), wait(page), shot(dir, shotName), chromedp.Evaluate(layoutCheck, &raw)); err != nil {
		t.Fatal(err)
	}
	var l layout
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Bad {
		t.Errorf("%s: %s", path, p)
	}
	return l
}

// shotsDir is where the screenshots go: SPADE_VIEW_SHOTS, or a temporary directory.
func shotsDir(t *testing.T) string {
	if dir := os.Getenv("SPADE_VIEW_SHOTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// wantCharts fails the test unless every named chart is on the page.
func wantCharts(t *testing.T, l layout, path string, names ...string) {
	t.Helper()
	for _, n := range names {
		if !slices.Contains(l.Charts, n) {
			t.Errorf("%s: no chart %s (charts: %v)", path, n, l.Charts)
		}
	}
}

// TestChartsReadWellOnTheDemoLake: at 1,400 px in headless Chromium the demo's run list, timeline and
// compare page draw a mark in every chart, cut no text, overlap nothing, space the x ticks evenly and fit
// the runs table.
func TestChartsReadWellOnTheDemoLake(t *testing.T) {
	b := newBrowser(t)
	lk, run := demoLake(t)
	ts := startServer(t, lk, Options{})
	dir := shotsDir(t)
	checkLayout(t, b, ts.URL, "/", "runs", dir, "demo-runs")
	l := checkLayout(t, b, ts.URL, "/runs/"+run, "timeline", dir, "demo-timeline")
	wantCharts(t, l, run, "band", "regret", "solve_rates", "returns", "acceptance", "attempts", "cost", "cost_designer", "cost_time", "cost_cpu")
	c := checkLayout(t, b, ts.URL, "/compare?"+url.Values{"run": {run}}.Encode(), "compare", dir, "demo-compare")
	wantCharts(t, c, "compare", "band_share", "agent_tokens_per_step")
	b.check(t)
	t.Logf("%d timeline charts; screenshots in %s", len(l.Charts), dir)
}

// TestChartsReadWellOnALongRun: the same checks on a 400-step synthetic run with training curves, next to
// a 100-step one (the compare page, a runs table of two runs).
func TestChartsReadWellOnALongRun(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 400-step run; skipped with -short")
	}
	b := newBrowser(t)
	ctx := context.Background()
	lk := laketest.New(t)
	for run, steps := range map[string]int{"paper-length-run": 400, "short": 100} {
		o := synth.Small()
		o.Steps, o.Train = steps, true
		start := time.Now()
		if err := synth.Write(ctx, lk, run, o); err != nil {
			t.Fatal(err)
		}
		// The Vendi chart reads the envs' embeddings.
		if _, err := analytics.EnsureEmbeddings(ctx, lk, run, analytics.EmbedderSpec{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("run %s: %d steps written and embedded in %v", run, steps, time.Since(start).Round(time.Millisecond))
	}
	ts := startServer(t, lk, Options{})
	dir := shotsDir(t)
	checkLayout(t, b, ts.URL, "/", "runs", dir, "long-runs")
	l := checkLayout(t, b, ts.URL, "/runs/paper-length-run", "timeline", dir, "long-timeline")
	wantCharts(t, l, "timeline", "band", "regret", "vendi", "solve_rates", "returns", "designer_reward", "acceptance", "attempts",
		"cost", "cost_designer", "cost_time", "cost_cpu", "train_agent_loss", "train_agent_kl", "train_agent_grad_norm",
		"train_agent_clip", "train_agent_lr", "train_agent_throughput", "train_agent_update_time", "left_out",
		"train_designer_loss", "train_designer_tokens")
	c := checkLayout(t, b, ts.URL, "/compare?"+url.Values{"run": {"paper-length-run", "short"}}.Encode(), "compare", dir, "long-compare")
	wantCharts(t, c, "compare", "band_share", "solve_rate_nohint", "regret", "acceptance", "agent_tokens_per_step")
	b.check(t)
	t.Logf("%d timeline charts, %d compare charts; screenshots in %s", len(l.Charts), len(c.Charts), dir)
}
