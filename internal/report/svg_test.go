package report

import (
	"math"
	"strings"
	"testing"
)

// The chart's y ticks are the shared axis helper's (internal/axis), labelled in one unit.
func TestChartTicksAreTheAxisHelpers(t *testing.T) {
	svg := LineChart("c", "t", "step", "tokens", []Series{{Name: "a", X: []float64{0, 1, 2}, Y: []float64{0, 3e6, 6069949}}}, 0, math.NaN())
	for _, l := range []string{">0</text>", ">2M</text>", ">4M</text>", ">6M</text>", ">8M</text>"} {
		if !strings.Contains(svg, l) {
			t.Errorf("tick %s missing: %s", l, svg)
		}
	}
	if strings.Contains(svg, `class="tick" text-anchor="end">6069949`) || strings.Contains(svg, "e+") {
		t.Errorf("unrounded or exponent tick: %s", svg)
	}
}

func TestChartsDrawEveryPoint(t *testing.T) {
	svg := LineChart("c", "t", "x", "y", []Series{{Name: "a", X: []float64{0, 1, 2}, Y: []float64{1, math.NaN(), 3}}}, 0, math.NaN())
	if strings.Count(svg, "<circle") != 2 || !strings.Contains(svg, `class="series"`) || strings.Contains(svg, "NaN") {
		t.Errorf("line chart with a gap: %s", svg)
	}
	bars := BarChart("b", "t", "y", []string{"early", "late"}, []string{"s1", "s2"}, [][]float64{{1, 2}, {3, math.NaN()}})
	if strings.Count(bars, `class="bar"`) != 3 || !strings.Contains(bars, ">early<") {
		t.Errorf("bar chart: %s", bars)
	}
}

// A run shorter than one window has one x value: the point is centred, a large mark with its value written
// beside it, drawn as a visible dash (a lone
// "M x y" path has an empty box, which the report's own check counts as an undrawn chart), and an integer
// x axis gets no fractional ticks.
func TestLineChartOnePoint(t *testing.T) {
	svg := LineChart("c", "t", "window", "y", []Series{{Name: "a", X: []float64{0}, Y: []float64{0.25}}}, 0, 1)
	if !strings.Contains(svg, `d="M332.0 204.5 L356.0 204.5"`) {
		t.Errorf("lone point not a centred dash: %s", svg)
	}
	if !strings.Contains(svg, `class="point" cx="344.0" cy="204.5" r="4.5"`) || !strings.Contains(svg, `class="value" x="352.0" y="198.5" fill="#0072B2">0.25</text>`) {
		t.Errorf("lone point not a large mark with its value beside it: %s", svg)
	}
	if n := strings.Count(svg, `class="tick" text-anchor="middle"`); n != 1 || !strings.Contains(svg, `text-anchor="middle">0</text>`) {
		t.Errorf("x ticks: want only 0, got %d: %s", n, svg)
	}
}

// Ticks and values never read as exponents ("5e+03" on a Designer cost axis) and change unit where %.3g
// would round up to the next one.
func TestFmtTick(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.375: "0.375", 999: "999", 999.7: "1k", 5000: "5k", 12500: "12.5k",
		999_700: "1M", 2.5e6: "2.5M", 3e9: "3G", -5000: "-5k"} {
		if got := fmtTick(v); got != want {
			t.Errorf("fmtTick(%v) = %q, want %q", v, got, want)
		}
	}
}

// A run of two or three windows writes each value beside its point: a point at the right edge gets its
// label on its left (past the edge "0.75" would be cut to "0"), a point at the top gets it below (above
// the frame it would run into the legend), and a range taken from the data ends on labelled ticks.
func TestLineChartValueLabels(t *testing.T) {
	svg := LineChart("c", "t", "step", "rate", []Series{{Name: "a", X: []float64{0, 2}, Y: []float64{1, 0.75}}}, 0, 1)
	if !strings.Contains(svg, `<text class="value" x="616.0" y="95.5" fill="#0072B2" text-anchor="end">0.75</text>`) {
		t.Errorf("right-edge value not left of its point: %s", svg)
	}
	if !strings.Contains(svg, `<text class="value" x="72.0" y="66.0" fill="#0072B2">1</text>`) {
		t.Errorf("top value not below its point: %s", svg)
	}
	svg = LineChart("r", "t", "step", "regret", []Series{{Name: "a", X: []float64{0, 2}, Y: []float64{0.375, 0.484}}}, math.NaN(), math.NaN())
	for _, tick := range []string{">0.35</text>", ">0.5</text>"} {
		if !strings.Contains(svg, tick) {
			t.Errorf("data range not rounded out to the tick %s: %s", tick, svg)
		}
	}
}
