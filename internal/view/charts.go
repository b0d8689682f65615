package view

import (
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/spadekit/spade/internal/axis"
	"github.com/spadekit/spade/internal/report"
	"github.com/spadekit/spade/schemas"
)

// chartSpec is one chart as the app draws it: the points of each series and both axes, laid out here by
// internal/axis (the report's axes too), so the page only maps values to pixels.
type chartSpec struct {
	// Name identifies the chart on the page (data-chart); Group is the heading it is drawn under.
	Name  string `json:"name"`
	Group string `json:"group"`
	// Title, XLabel and YLabel label it; YLabel names the one unit of its y axis.
	Title  string `json:"title"`
	XLabel string `json:"x_label"`
	YLabel string `json:"y_label"`
	// SQL are (label, query) links to the console for the data drawn.
	SQL [][2]string `json:"sql"`
	// Series are the lines, each with its non-null points.
	Series []seriesSpec `json:"series"`
	// X and Y are the laid-out axes.
	X axis.Axis `json:"x"`
	Y axis.Axis `json:"y"`
}

// seriesSpec is one line of a chart.
type seriesSpec struct {
	Name   string       `json:"name"`
	Points [][2]float64 `json:"points"`
}

// line names the columns of a dataset one series draws (rows filters them; nil keeps every row).
type line struct {
	name string
	ds   *Dataset
	x, y string
	rows func(row []any, col func(string) int) bool
}

// number reads a JSON-ready value as a float (false for null or text).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// newChart builds a chart of the lines: x on a whole-number axis (steps, window starts), y on a value
// axis with the given bounds. It returns nil when no line has a point (every chart drawn shows a mark).
func newChart(group, name, title, xLabel, yLabel string, b axis.Bounds, lines ...line) *chartSpec {
	c := &chartSpec{Name: name, Group: group, Title: title, XLabel: xLabel, YLabel: yLabel}
	var xs, ys []float64
	seen := map[string]bool{}
	for _, l := range lines {
		if !seen[l.ds.SQL] {
			seen[l.ds.SQL] = true
			c.SQL = append(c.SQL, [2]string{"SQL", l.ds.SQL})
		}
		col := func(name string) int {
			for i, c := range l.ds.Columns {
				if c == name {
					return i
				}
			}
			return -1
		}
		xi, yi := col(l.x), col(l.y)
		s := seriesSpec{Name: l.name, Points: [][2]float64{}}
		for _, row := range l.ds.Rows {
			if xi < 0 || yi < 0 || (l.rows != nil && !l.rows(row, col)) {
				continue
			}
			x, okx := number(row[xi])
			y, oky := number(row[yi])
			if okx && oky {
				s.Points = append(s.Points, [2]float64{x, y})
				xs, ys = append(xs, x), append(ys, y)
			}
		}
		c.Series = append(c.Series, s)
	}
	if len(xs) == 0 {
		return nil
	}
	if len(c.SQL) > 1 {
		for i := range c.SQL {
			c.SQL[i][0] = fmt.Sprintf("SQL %d", i+1)
		}
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	c.X = axis.Steps(lo, hi, 8)
	c.Y = axis.Linear(ys, 4, b)
	return c
}

// roleIs keeps the rows of one role.
func roleIs(role schemas.Role) func([]any, func(string) int) bool {
	return func(row []any, col func(string) int) bool {
		i := col("role")
		return i >= 0 && row[i] == string(role)
	}
}

// trainSQL selects every column of the report's training panels (report.TrainPanels) per role and step,
// named <panel>_<i>.
func trainSQL() string {
	sel := []string{"role", "step"}
	for _, p := range report.TrainPanels {
		for i, c := range p.Columns {
			sel = append(sel, fmt.Sprintf("(%s)::double as %s", c[0], trainColumn(p, i)))
		}
	}
	return "select " + strings.Join(sel, ", ") + " from train_metrics order by role, step"
}

func trainColumn(p report.TrainPanel, i int) string {
	return strings.ReplaceAll(p.ID, "-", "_") + "_" + fmt.Sprint(i)
}

// timelineCharts are the timeline's charts over its datasets: one unit per axis, a panel per role where
// the roles' magnitudes differ (tokens) and per unit (latency in ms apart from CPU seconds).
func timelineCharts(S map[string]*Dataset) []*chartSpec {
	all := []*chartSpec{
		newChart("Curriculum", "band", "Learnable-band share (window)", "window start", "share of quota", axis.Unit,
			line{name: "band share", ds: S["band"], x: "window_start", y: "band_share"}),
		newChart("Curriculum", "regret", "Hint regret", "step", "regret", axis.Free,
			line{name: "regret", ds: S["regret"], x: "step", y: "regret"},
			line{name: "moving average", ds: S["regret"], x: "step", y: "regret_smoothed"}),
		newChart("Curriculum", "vendi", "Vendi/n (window)", "window start", "Vendi / n", axis.Unit,
			line{name: "Vendi/n", ds: S["vendi"], x: "window_start", y: "vendi_per_n"}),
		newChart("Agent", "solve_rates", "Agent solve rate", "step", "solve rate", axis.Unit,
			line{name: "unhinted", ds: S["solve_rates"], x: "step", y: "solve_rate_nohint"},
			line{name: "hinted", ds: S["solve_rates"], x: "step", y: "solve_rate_hint"}),
		newChart("Agent", "returns", "Agent mean return", "step", "mean return", axis.Free,
			line{name: "unhinted", ds: S["solve_rates"], x: "step", y: "return_nohint"},
			line{name: "hinted", ds: S["solve_rates"], x: "step", y: "return_hint"}),
		newChart("Designer", "designer_reward", "Designer reward (pool)", "pool step", "reward", axis.Free,
			line{name: "reward", ds: S["designer_reward"], x: "pool_step", y: "reward"}),
		newChart("Designer", "acceptance", "Gate acceptance (pool)", "pool step", "accepted per slot", axis.Unit,
			line{name: "acceptance", ds: S["acceptance"], x: "step", y: "acceptance"}),
		newChart("Designer", "attempts", "Gate attempts per slot (pool)", "pool step", "attempts per slot", axis.FromZero,
			line{name: "attempts per slot", ds: S["acceptance"], x: "step", y: "attempts_per_slot"}),
		newChart("Cost", "cost", "Agent tokens per step", "step", "tokens", axis.FromZero,
			line{name: "agent tokens", ds: S["cost"], x: "step", y: "agent_tokens"}),
		newChart("Cost", "cost_designer", "Designer tokens per step", "step", "tokens", axis.FromZero,
			line{name: "designer tokens", ds: S["cost"], x: "step", y: "designer_tokens"}),
		newChart("Cost", "cost_time", "Agent latency", "step", "ms per call", axis.FromZero,
			line{name: "mean latency", ds: S["cost"], x: "step", y: "agent_latency_ms"},
			line{name: "p95 latency", ds: S["cost"], x: "step", y: "agent_latency_p95_ms"}),
		newChart("Cost", "cost_cpu", "Env CPU time per step", "step", "CPU seconds", axis.FromZero,
			line{name: "env CPU", ds: S["cost"], x: "step", y: "env_cpu_seconds"}),
	}
	for _, role := range schemas.TrainedRoles() {
		name := strings.ToUpper(string(role[:1])) + string(role[1:])
		for _, p := range report.TrainPanels {
			if p.AgentOnly && role != schemas.RoleAgent {
				continue
			}
			var lines []line
			for i, c := range p.Columns {
				lines = append(lines, line{name: c[1], ds: S["train"], x: "step", y: trainColumn(p, i), rows: roleIs(role)})
			}
			chartName := "train_" + string(role) + "_" + strings.ReplaceAll(p.ID, "-", "_")
			if p.ID == "left-out" {
				chartName = "left_out"
			}
			all = append(all, newChart("Training: "+name, chartName, name+": "+p.Title, "step", p.YLabel, axis.Bounds{Lo: p.Lo, Hi: p.Hi}, lines...))
		}
	}
	var out []*chartSpec
	for _, c := range all {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// compareMetrics are the compare page's charts: a dashboard column per window, one line per run. Agent
// tokens are per step (the window's sum over its steps), so a last window cut short by the end of a run
// does not read as a collapse.
var compareMetrics = []struct {
	col, title, unit string
	b                axis.Bounds
}{
	{"band_share", "Learnable-band share", "share of quota", axis.Unit},
	{"solve_rate_nohint", "Solve rate, no hint", "solve rate", axis.Unit},
	{"solve_rate_hint", "Solve rate, hint", "solve rate", axis.Unit},
	{"regret", "Hint regret", "regret", axis.Free},
	{"vendi_per_n", "Vendi/n", "Vendi / n", axis.Unit},
	{"acceptance", "Gate acceptance", "accepted per slot", axis.Unit},
	{"agent_tokens_per_step", "Agent tokens per step", "tokens per step", axis.FromZero},
}

// compareSQL is the dashboard with the Agent's tokens per step of each window.
const compareSQL = "select * exclude (run), agent_tokens / (window_end - window_start + 1)::double as agent_tokens_per_step from dashboard order by window_index"

// handleCompare returns the compare page's charts for the runs named by ?run=.
func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	runs, err := s.runsParam(ctx, r.URL.Query()["run"])
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	dash := map[string]*Dataset{}
	for _, run := range runs {
		if dash[run], err = s.memo(ctx, []string{run}, compareSQL, true); err != nil {
			writeError(w, statusOf(err), fmt.Errorf("run %s: %w", run, err))
			return
		}
	}
	charts := []*chartSpec{}
	for _, m := range compareMetrics {
		var lines []line
		for _, run := range runs {
			lines = append(lines, line{name: run, ds: dash[run], x: "window_start", y: m.col})
		}
		c := newChart("", m.col, m.title+" by window", "window start", m.unit, m.b, lines...)
		if c == nil {
			continue
		}
		c.SQL = nil
		for _, run := range runs {
			c.SQL = append(c.SQL, [2]string{run, dash[run].SQL})
		}
		charts = append(charts, c)
	}
	writeJSON(w, map[string]any{"runs": runs, "charts": charts})
}
