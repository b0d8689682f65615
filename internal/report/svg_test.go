package report

import (
	"math"
	"strings"
	"testing"
)

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []float64
	}{
		{0, 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{-0.03, 0.17, []float64{0, 0.05, 0.1, 0.15}},
		{0, 400, []float64{0, 100, 200, 300, 400}},
	} {
		got := ticks(tc.lo, tc.hi, 5)
		if len(got) != len(tc.want) {
			t.Errorf("ticks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 || math.Signbit(got[i]) && got[i] == 0 {
				t.Errorf("ticks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
			}
		}
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
