// Package report writes a run's analytics as one self-contained HTML file: inline SVG charts, no script or
// style from the network, so it opens offline and can be attached to a paper review. The charts are the
// ones a reader of SPADE §3.4–3.5 looks for: learnable-band share by window (Figure 6), hint regret over
// steps (Figure 12 right), gate acceptance and failures by check, Vendi/n by window (Table 8), reward levels
// and formula disclosure early vs late (Figure 8 and the audit), and cost per step.
//
// The page checks itself: a small inline script counts the charts that drew at least one mark with a
// non-empty bounding box, listens for errors, and writes the verdict into the element #report-status
// (`charts-ok N/N` or `charts-failed ...`) in the data-status attribute of a hidden element, the charts
// whose legend overlaps a title, another legend item, the plot or a value label in data-overlaps, the
// charts with a text past their own edge in data-clipped, and the milliseconds from navigation start to
// that verdict in data-render-ms; a headless browser's --dump-dom shows them, a reader none.
package report

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/safetext"
	"github.com/spadekit/spade/schemas"
)

// Chart is one rendered chart of the report.
type Chart struct {
	// ID is the SVG element id.
	ID string
	// SVG is the inline <svg> element.
	SVG string
	// Caption says what the chart shows and which figure of the paper it mirrors.
	Caption string
}

// Build runs the models of a session and returns the report's HTML.
func Build(ctx context.Context, s *analytics.Session) ([]byte, error) {
	charts, err := Charts(ctx, s)
	if err != nil {
		return nil, err
	}
	audits, err := s.Model(ctx, "audits")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>SPADE run %[1]s</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1360px}
h1{font-size:22px;margin:0 0 4px}
.meta{color:#666;font-size:13px;margin-bottom:16px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(640px,1fr));gap:18px}
figure{margin:0;border:1px solid #ddd;border-radius:6px;padding:8px;background:#fff}
figcaption{font-size:12px;color:#555;margin-top:4px}
svg.chart{width:100%%;height:auto;display:block}
svg .title{font-size:14px;font-weight:600}
svg .tick{font-size:11px;fill:#444}
svg .label{font-size:12px;fill:#333}
svg .frame{fill:none;stroke:#bbb}
svg .grid{stroke:#eee}
svg .zero{stroke:#888;stroke-dasharray:2 2}
table{border-collapse:collapse;font-size:13px;margin-top:16px}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:right}
svg .value{font-size:11px;font-weight:600}
</style></head><body>
<h1>SPADE run %[1]s</h1>
<div class="meta">band [%[2]g, %[3]g] · %[4]d-step windows · %[5]d envs per pool · generated %[6]s by spade report</div>
<div class="grid">
`, html.EscapeString(s.Run), s.Config.Metrics.BandLo, s.Config.Metrics.BandHi, s.Config.Metrics.Window,
		s.Config.Sample.EnvsPerStep, time.Now().UTC().Format(time.RFC3339))
	for _, c := range charts {
		fmt.Fprintf(&b, "<figure>%s<figcaption>%s</figcaption></figure>\n", c.SVG, html.EscapeString(c.Caption))
	}
	b.WriteString("</div>\n<h2 style=\"font-size:16px\">Quality audit, early vs late half</h2>\n")
	b.WriteString(htmlTable(audits))
	leftOut, err := leftOutSection(ctx, s)
	if err != nil {
		return nil, err
	}
	b.WriteString(leftOut)
	contradicted, err := gateContradictionsSection(ctx, s)
	if err != nil {
		return nil, err
	}
	b.WriteString(contradicted)
	// The page checks itself (for the tests, through a headless browser): the verdict goes into data
	// attributes of a hidden element, never into text a reader sees.
	fmt.Fprintf(&b, `<div id="report-status" hidden data-expected="%d" data-status="charts-pending"></div>
<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message || e)); });
  function verify() {
    var charts = document.querySelectorAll('svg.chart');
    var ok = 0, bad = [];
    charts.forEach(function (svg) {
      var marks = svg.querySelectorAll('path.series, rect.bar, circle.point');
      var drawn = 0;
      marks.forEach(function (m) { var r = m.getBBox(); if (r.width > 0 || r.height > 0) drawn++; });
      if (drawn > 0 && svg.getBoundingClientRect().width > 0) ok++; else bad.push(svg.id);
    });
    // Layout: no legend item overlaps the chart's title, another legend item or the plot frame.
    function hit(a, b) { return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; }
    var overlaps = [];
    charts.forEach(function (svg) {
      var items = Array.prototype.map.call(svg.querySelectorAll('.legend-item'), function (g) { return g.getBoundingClientRect(); });
      var others = Array.prototype.map.call(svg.querySelectorAll('text.title, rect.frame, text.value'), function (e) { return e.getBoundingClientRect(); });
      items.forEach(function (a, i) {
        others.forEach(function (o) { if (hit(a, o)) overlaps.push(svg.id); });
        items.forEach(function (b, j) { if (j > i && hit(a, b)) overlaps.push(svg.id); });
      });
    });
    // Clipping: every text of a chart (ticks, labels, values beside the points) lies inside its chart's
    // box; a value written past the edge would read as a shorter number ("0" for "0.75").
    var clipped = [];
    charts.forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      svg.querySelectorAll('text').forEach(function (e) {
        var r = e.getBoundingClientRect();
        if (r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)) {
          if (clipped.indexOf(svg.id) < 0) clipped.push(svg.id);
        }
      });
    });
    var expected = Number(document.getElementById('report-status').dataset.expected);
    var status = document.getElementById('report-status');
    status.dataset.overlaps = overlaps.join(',');
    status.dataset.clipped = clipped.join(',');
    if (ok === expected && charts.length === expected && errors.length === 0) {
      status.dataset.status = 'charts-ok ' + ok + '/' + expected;
    } else {
      status.dataset.status = 'charts-failed ' + ok + '/' + expected + ' bad=' + bad.join(',') + ' errors=' + errors.join(' | ');
    }
    // Milliseconds from navigation start to this verdict (every chart laid out and measured).
    status.dataset.renderMs = performance.now().toFixed(1);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', verify); else verify();
})();
</script>
</body></html>
`, len(charts))
	return b.Bytes(), nil
}

// Charts runs the models and draws the report's charts.
func Charts(ctx context.Context, s *analytics.Session) ([]Chart, error) {
	get := func(name string) (*analytics.Table, error) { return s.Model(ctx, name) }
	var charts []Chart

	band, err := get("learnable_band")
	if err != nil {
		return nil, err
	}
	charts = append(charts, Chart{ID: "learnable-band", Caption: "Share of the env quota with no-hint solve rate in the learnable band, per window; unfilled slots count as 0 (SPADE Figure 6).",
		SVG: LineChart("learnable-band", "Learnable-band share by window", "window start step", "share of quota",
			[]Series{{Name: "band share", X: col(band, "window_start"), Y: col(band, "band_share")}}, 0, 0.5)})

	regret, err := get("regret_curve")
	if err != nil {
		return nil, err
	}
	charts = append(charts, Chart{ID: "regret", Caption: "Hint regret r̄(e|h) − r̄(e), mean over envs per step, and its moving average over the window (SPADE Figure 12 right).",
		SVG: LineChart("regret", "Hint regret over steps", "step", "regret", []Series{
			{Name: "per step", X: col(regret, "step"), Y: col(regret, "regret")},
			{Name: "smoothed", X: col(regret, "step"), Y: col(regret, "regret_smoothed"), Dashed: true},
		}, math.NaN(), math.NaN())})

	scores, err := evalScoreSeries(ctx, s)
	if err != nil {
		return nil, err
	}
	// A run with no eval_results has no chart: every chart on the page must show a mark.
	if len(scores) > 0 {
		charts = append(charts, Chart{ID: "eval-scores", Caption: "Downstream benchmark score per training step: avg@K (the mean of the per-item means over K samples) per benchmark, from `spade eval` (SPADE Figure 12 left).",
			SVG: LineChart("eval-scores", "Benchmark scores per step", "step", "avg@K", scores, 0, 1)})
	}

	outcomes, err := outcomeCharts(ctx, s)
	if err != nil {
		return nil, err
	}
	charts = append(charts, outcomes...)

	acc, err := get("acceptance")
	if err != nil {
		return nil, err
	}
	charts = append(charts, Chart{ID: "acceptance", Caption: "Gate acceptance per pool: accepted envs per slot, and accepted per Designer attempt.",
		SVG: LineChart("acceptance", "Gate acceptance per pool", "pool step", "rate", []Series{
			{Name: "per slot", X: col(acc, "step"), Y: col(acc, "acceptance")},
			{Name: "per attempt", X: col(acc, "step"), Y: col(acc, "attempt_acceptance")},
		}, 0, 1)})

	failures, err := analytics.Query(ctx, s.DB, `select gate_check, sum(failures)::double as failures, sum(ran)::double as ran
		from gate_failures group by gate_check order by gate_check`)
	if err != nil {
		return nil, err
	}
	checks := strs(failures, "gate_check")
	charts = append(charts, Chart{ID: "gate-failures", Caption: "Gate failures by check over the run (a failure stops the later checks of that attempt).",
		SVG: BarChart("gate-failures", "Gate failures by check", "failures", checks, []string{"failures"},
			[][]float64{col(failures, "failures")})})

	div, err := get("vendi_by_window")
	if err != nil {
		return nil, err
	}
	charts = append(charts, Chart{ID: "vendi", Caption: "Vendi/n of the accepted envs' embeddings per window (" + s.EmbedderName() + "); compare runs at equal n with `spade ablate` (SPADE Table 8).",
		SVG: LineChart("vendi", "Vendi/n by window", "window start step", "Vendi / n", []Series{
			{Name: "Vendi/n", X: windowStart(col(div, "window_index"), s.Config.Metrics.Window), Y: col(div, "vendi_per_n")},
			{Name: "mean cosine distance", X: windowStart(col(div, "window_index"), s.Config.Metrics.Window), Y: col(div, "mean_cosine_distance"), Dashed: true},
		}, 0, 1)})

	audits, err := get("audits")
	if err != nil {
		return nil, err
	}
	phases := strs(audits, "phase")
	charts = append(charts, Chart{ID: "reward-levels", Caption: "Distinct reward levels per env and strictly partial levels, early vs late half (SPADE §3.4: 3.7 → 5.8 and 2.2 → 4.0).",
		SVG: BarChart("reward-levels", "Reward levels per env, early vs late", "levels", phases,
			[]string{"reward levels", "partial levels"}, [][]float64{col(audits, "reward_levels"), col(audits, "partial_levels")})})
	charts = append(charts, Chart{ID: "disclosure", Caption: "Share of envs whose opening observation states a formula (heuristic; SPADE Figure 8: 25% → 5%), with well-defined and verifiable shares.",
		SVG: BarChart("disclosure", "Formula disclosure and quality, early vs late", "share of envs", phases,
			[]string{"formula disclosed", "well-defined", "verifiable"},
			[][]float64{col(audits, "formula_disclosure"), col(audits, "well_defined"), col(audits, "verifiable")})})

	cost, err := get("cost")
	if err != nil {
		return nil, err
	}
	// One panel per role: the Agent's tokens are orders of magnitude above the Designer's, which a shared
	// axis would flatten to 0.
	charts = append(charts, Chart{ID: "cost-agent", Caption: "Agent tokens per step (every rollout call).",
		SVG: LineChart("cost-agent", "Cost per step: Agent", "step", "tokens", []Series{
			{Name: "agent", X: col(cost, "step"), Y: col(cost, "agent_tokens")},
		}, 0, math.NaN())})
	charts = append(charts, Chart{ID: "cost-designer", Caption: "Designer tokens per step (they land on refresh steps: generation and the gate's regenerations).",
		SVG: LineChart("cost-designer", "Cost per step: Designer", "step", "tokens", []Series{
			{Name: "designer", X: col(cost, "step"), Y: col(cost, "designer_tokens")},
		}, 0, math.NaN())})
	training, err := TrainingCharts(ctx, s)
	if err != nil {
		return nil, err
	}
	return append(charts, training...), nil
}

// outcomeCharts are the per-step outcome curves of each role: the Agent's solve rate and mean return
// without and with the hint, and the Designer's mean reward per pool (its final rows of the run's reward
// variant). A curve with no point is left out (every chart on the page shows a mark).
func outcomeCharts(ctx context.Context, s *analytics.Session) ([]Chart, error) {
	rates, err := s.Model(ctx, "solve_rates")
	if err != nil {
		return nil, err
	}
	var out []Chart
	if hasValue(col(rates, "solve_rate_nohint"), col(rates, "solve_rate_hint")) {
		out = append(out, Chart{ID: "solve-rates", Caption: "The Agent's solve rate per step over the episodes that count, without and with the privileged hint (SPADE §3.4).",
			SVG: LineChart("solve-rates", "Agent solve rate per step", "step", "solve rate", []Series{
				{Name: "unhinted", X: col(rates, "step"), Y: col(rates, "solve_rate_nohint")},
				{Name: "hinted", X: col(rates, "step"), Y: col(rates, "solve_rate_hint")},
			}, 0, 1)})
		out = append(out, Chart{ID: "returns", Caption: "The Agent's mean episode return per step, without and with the hint.",
			SVG: LineChart("returns", "Agent mean return per step", "step", "mean return", []Series{
				{Name: "unhinted", X: col(rates, "step"), Y: col(rates, "return_nohint")},
				{Name: "hinted", X: col(rates, "step"), Y: col(rates, "return_hint")},
			}, math.NaN(), math.NaN())})
	}
	rewards, err := analytics.Query(ctx, s.DB, `select pool_step, avg(reward) as reward, avg(regret) as regret, avg(anchor) as anchor
		from designer_rewards where final and variant = ? group by pool_step order by pool_step`, string(s.Config.Regret.Variant))
	if err != nil {
		return nil, fmt.Errorf("report: designer_rewards: %w", err)
	}
	if hasValue(col(rewards, "reward")) {
		out = append(out, Chart{ID: "designer-reward", Caption: "The Designer's mean reward per pool (variant " + string(s.Config.Regret.Variant) + ", final rows), with its regret and anchor terms.",
			SVG: LineChart("designer-reward", "Designer reward per pool", "pool step", "reward", []Series{
				{Name: "reward", X: col(rewards, "pool_step"), Y: col(rewards, "reward")},
				{Name: "regret", X: col(rewards, "pool_step"), Y: col(rewards, "regret"), Dashed: true},
				{Name: "anchor", X: col(rewards, "pool_step"), Y: col(rewards, "anchor"), Dashed: true},
			}, math.NaN(), math.NaN())})
	}
	return out, nil
}

// TrainPanel is one chart of the training curves: train_metrics columns of one unit.
type TrainPanel struct {
	// ID names the panel ("loss"); Title and YLabel label it.
	ID, Title, YLabel string
	// Columns are the SQL expressions over train_metrics drawn, with their legend names.
	Columns [][2]string
	// Lo and Hi fix the ends of the y axis (NaN: from the data; axis.Bounds).
	Lo, Hi float64
	// AgentOnly draws the panel for the Agent alone (its columns are 0 on Designer rows).
	AgentOnly bool
}

// TrainPanels are the training panels drawn per role, every train_metrics column in one of them.
var TrainPanels = []TrainPanel{
	{"loss", "GRPO loss", "loss", [][2]string{{"loss", "loss"}}, math.NaN(), math.NaN(), false},
	{"kl", "KL to the reference", "k3 KL", [][2]string{{"kl", "kl"}}, 0, math.NaN(), false},
	{"grad-norm", "Gradient norm before clipping", "grad norm", [][2]string{{"grad_norm", "grad norm"}}, 0, math.NaN(), false},
	{"clip", "Clip fraction", "share of tokens", [][2]string{{"clip_frac", "clipped"}, {"clip_frac_low", "low side"}, {"clip_frac_high", "high side"}}, 0, math.NaN(), false},
	{"ratio", "Importance ratio", "ratio", [][2]string{{"ratio_mean", "ratio mean"}, {"ratio_max", "ratio max"}, {"is_weight_mean", "IS weight mean"}}, math.NaN(), math.NaN(), false},
	{"lr", "Learning rate", "lr", [][2]string{{"lr", "lr"}}, 0, math.NaN(), false},
	{"throughput", "Training throughput", "tokens / s", [][2]string{{"tokens / nullif(seconds, 0)", "tokens/s"}}, 0, math.NaN(), false},
	{"update-time", "Update time", "seconds", [][2]string{{"seconds", "update time"}}, 0, math.NaN(), false},
	{"tokens", "Tokens trained", "tokens", [][2]string{{"tokens", "tokens"}}, 0, math.NaN(), false},
	{"samples", "Samples trained", "samples", [][2]string{{"samples", "samples"}}, 0, math.NaN(), false},
	{"peak-memory", "Trainer peak memory", "bytes", [][2]string{{"peak_memory_bytes", "peak memory"}}, 0, math.NaN(), false},
	{"left-out", "Plays left out of training", "plays", [][2]string{{"left_out_broken_prefix", "broken prefix"},
		{"left_out_missing_tokens", "missing token ids"}, {"left_out_missing_call", "missing call"}}, 0, math.NaN(), true},
}

// TrainingCharts draws every train_metrics column per step, one panel per unit and role (the Designer's
// updates are far fewer and smaller than the Agent's: a shared axis would flatten them); a role without
// rows has no panels.
func TrainingCharts(ctx context.Context, s *analytics.Session) ([]Chart, error) {
	var out []Chart
	for _, role := range schemas.TrainedRoles() {
		for _, p := range TrainPanels {
			if p.AgentOnly && role != schemas.RoleAgent {
				continue
			}
			var sel []string
			for i, c := range p.Columns {
				sel = append(sel, fmt.Sprintf("(%s)::double as c%d", c[0], i))
			}
			t, err := analytics.Query(ctx, s.DB, "select step, "+strings.Join(sel, ", ")+
				" from train_metrics where role = ? order by step", string(role))
			if err != nil {
				return nil, fmt.Errorf("report: train_metrics: %w", err)
			}
			var series []Series
			var ys [][]float64
			for i, c := range p.Columns {
				y := col(t, fmt.Sprintf("c%d", i))
				ys = append(ys, y)
				series = append(series, Series{Name: c[1], X: col(t, "step"), Y: y})
			}
			if !hasValue(ys...) {
				continue
			}
			id := "train-" + string(role) + "-" + p.ID
			name := roleName(role)
			out = append(out, Chart{ID: id, Caption: fmt.Sprintf("%s: %s per training step (train_metrics).", name, p.Title),
				SVG: LineChart(id, name+": "+p.Title, "step", p.YLabel, series, p.Lo, p.Hi)})
		}
	}
	return out, nil
}

// roleName is a role as a title writes it.
func roleName(r schemas.Role) string {
	if r == "" {
		return ""
	}
	return strings.ToUpper(string(r[:1])) + string(r[1:])
}

// hasValue reports whether any of the columns holds a number (not NaN).
func hasValue(cols ...[]float64) bool {
	for _, c := range cols {
		for _, v := range c {
			if !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

// leftOutSection is the report's account of the Agent plays grpo left out of training (the left_out
// model): a table of the steps that left any out, per cause, under a line with the run's total; a line
// saying none was when none was.
func leftOutSection(ctx context.Context, s *analytics.Session) (string, error) {
	t, err := analytics.Query(ctx, s.DB, `select step, broken_prefix, missing_tokens, missing_call, left_out, samples
		from left_out where left_out > 0 order by step`)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(`<h2 style="font-size:16px">Plays left out of training</h2>` + "\n")
	if len(t.Rows) == 0 {
		b.WriteString(`<p id="left-out" data-left-out="0">No Agent play was left out of training: every play's samples assembled.</p>` + "\n")
		return b.String(), nil
	}
	total := 0.0
	for i := range t.Rows {
		total += t.Float(i, "left_out")
	}
	fmt.Fprintf(&b, `<p id="left-out" data-left-out="%g">%g Agent plays over %d steps were left out of training (their samples could not be assembled; they kept their returns in their groups). grpo fails a step past grpo.max_left_out_share (%g) of its plays.</p>`+"\n",
		total, total, len(t.Rows), s.Config.GRPO.MaxLeftOutShare)
	b.WriteString(htmlTable(t))
	return b.String(), nil
}

// gateContradictionsSection is the report's account of the accepted envs whose rollout contradicts the
// gate (the gate_contradictions model): how many, how many against a check that passed, and the list.
func gateContradictionsSection(ctx context.Context, s *analytics.Session) (string, error) {
	t, err := analytics.Query(ctx, s.DB, `select env_id, pool_step, kind, gate_checked, unhinted_plays, unhinted_solved_at_once,
		hinted_plays, hinted_solved_at_once from gate_contradictions order by pool_step, env_id, kind`)
	if err != nil {
		return "", fmt.Errorf("report: gate_contradictions: %w", err)
	}
	var b strings.Builder
	b.WriteString(`<h2 style="font-size:16px">Envs whose rollout contradicts the gate</h2>` + "\n")
	checked := 0
	for i := range t.Rows {
		if v, ok := t.Rows[i][3].(bool); ok && v {
			checked++
		}
	}
	if len(t.Rows) == 0 {
		b.WriteString(`<p id="gate-contradictions" data-flagged="0" data-against-a-check="0">No accepted env was trivial in rollout (every unhinted play solved at its first turn) or solved at once by every hinted play.</p>` + "\n")
		return b.String(), nil
	}
	fmt.Fprintf(&b, `<p id="gate-contradictions" data-flagged="%d" data-against-a-check="%d">%d accepted envs were trivial in rollout (every unhinted play solved at its first turn) or solved at once by every hinted play; %d of them had passed the gate check that should have caught it (trivial or hint_leak), which says the program could tell the gate from rollout.</p>`+"\n",
		len(t.Rows), checked, len(t.Rows), checked)
	b.WriteString(htmlTable(t))
	return b.String(), nil
}

// evalScoreSeries returns one series per benchmark (per run and benchmark when the session holds
// several runs) of avg@K against the step, from the eval_scores model; none when nothing was evaluated.
// Scores of several weights versions at one step are averaged.
func evalScoreSeries(ctx context.Context, s *analytics.Session) ([]Series, error) {
	t, err := analytics.Query(ctx, s.DB, `select run, bench, step, avg(avg_at_k) as avg_at_k
		from eval_scores group by run, bench, step order by run, bench, step`)
	if err != nil {
		return nil, fmt.Errorf("report: eval_scores: %w", err)
	}
	runs, benches, steps, values := strs(t, "run"), strs(t, "bench"), col(t, "step"), col(t, "avg_at_k")
	several := false
	for _, r := range runs {
		several = several || r != runs[0]
	}
	var out []Series
	for i := range t.Rows {
		name := benches[i]
		if several {
			name = runs[i] + " · " + benches[i]
		}
		if len(out) == 0 || out[len(out)-1].Name != name {
			out = append(out, Series{Name: name})
		}
		last := &out[len(out)-1]
		last.X = append(last.X, steps[i])
		last.Y = append(last.Y, values[i])
	}
	return out, nil
}

// windowStart turns window indexes into their first steps, so every windowed chart has the same x unit.
func windowStart(index []float64, window int) []float64 {
	out := make([]float64, len(index))
	for i, w := range index {
		out[i] = w * float64(window)
	}
	return out
}

// col returns a column as float64s (NaN for NULL).
func col(t *analytics.Table, name string) []float64 {
	out := make([]float64, len(t.Rows))
	j := t.Col(name)
	for i, r := range t.Rows {
		if j < 0 || r[j] == nil {
			out[i] = math.NaN()
			continue
		}
		out[i] = t.Float(i, name)
	}
	return out
}

// strs returns a column as strings.
func strs(t *analytics.Table, name string) []string {
	out := make([]string, len(t.Rows))
	for i := range t.Rows {
		out[i] = t.String(i, name)
	}
	return out
}

// htmlTable renders a table, numbers to 4 significant digits.
func htmlTable(t *analytics.Table) string {
	var b strings.Builder
	b.WriteString("<table><tr>")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c))
	}
	b.WriteString("</tr>")
	for _, r := range t.Rows {
		b.WriteString("<tr>")
		for _, v := range r {
			text := fmt.Sprint(v)
			if f, ok := v.(float64); ok {
				text = fmt.Sprintf("%.4g", f)
			} else if v == nil {
				text = ""
			}
			fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(safetext.Terminal(text)))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>\n")
	return b.String()
}
