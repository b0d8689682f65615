package axis

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func labels(a Axis) []string {
	out := make([]string, len(a.Ticks))
	for i, t := range a.Ticks {
		out[i] = t.Label
	}
	return out
}

// Every axis over many ranges: round 1-2-5 steps, evenly spaced, inside [Min, Max], the data inside
// [Min, Max], labels in one unit, distinct and without exponents above 0.001 or trailing zeros.
func TestLinearOverManyRanges(t *testing.T) {
	ranges := [][2]float64{
		{0, 1}, {0.006789, 0.1434}, {-0.03, 0.17}, {-0.5, 0.25}, {0, 6069949}, {1200, 1800}, {0.9, 1.1},
		{3e-6, 3e-6}, {1e-6, 5e-5}, {-12, -3}, {0, 400}, {97, 103}, {0.2, 0.2}, {0, 0}, {-1, 1}, {1e9, 3.2e9},
		{123456, 123789}, {0.49, 0.51}, {-0.0004, 0.0002},
	}
	for lo := -3.0; lo < 3; lo += 0.37 {
		for span := 0.001; span < 1e7; span *= 7.3 {
			ranges = append(ranges, [2]float64{lo * span, lo*span + span})
		}
	}
	for _, r := range ranges {
		a := Linear([]float64{r[0], r[1]}, 5, Free)
		if len(a.Ticks) < 2 || len(a.Ticks) > 7 {
			t.Errorf("%v: %d ticks %v", r, len(a.Ticks), labels(a))
			continue
		}
		step := a.Ticks[1].Value - a.Ticks[0].Value
		mant := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9))
		if !slices.ContainsFunc([]float64{1, 2, 5}, func(m float64) bool { return math.Abs(m-mant) < 1e-6 }) {
			t.Errorf("%v: step %g is not 1, 2 or 5 × 10^k", r, step)
		}
		for i := 1; i < len(a.Ticks); i++ {
			if d := a.Ticks[i].Value - a.Ticks[i-1].Value; math.Abs(d-step) > step*1e-6 {
				t.Errorf("%v: uneven ticks %v", r, labels(a))
			}
		}
		if tol := (r[1] - r[0] + math.Abs(r[1])) * 1e-9; a.Min > r[0]+tol || a.Max < r[1]-tol || a.Max <= a.Min {
			t.Errorf("%v: range [%g, %g] does not hold the data", r, a.Min, a.Max)
		}
		if a.Ticks[0].Value < a.Min-step*1e-6 || a.Ticks[len(a.Ticks)-1].Value > a.Max+step*1e-6 {
			t.Errorf("%v: ticks %v outside [%g, %g]", r, labels(a), a.Min, a.Max)
		}
		seen := map[string]bool{}
		for _, tk := range a.Ticks {
			l := tk.Label
			if seen[l] {
				t.Errorf("%v: label %q twice in %v", r, l, labels(a))
			}
			seen[l] = true
			if l == "-0" || (strings.Contains(l, "e") && math.Abs(a.Ticks[len(a.Ticks)-1].Value) >= 1e-3 && math.Abs(a.Ticks[0].Value) >= 1e-3) {
				t.Errorf("%v: label %q", r, l)
			}
			if strings.Contains(l, ".") && strings.HasSuffix(strings.TrimRight(l, "kMG"), "0") && !strings.Contains(l, "e") {
				t.Errorf("%v: trailing zero in %q", r, l)
			}
			if len(l) > 8 {
				t.Errorf("%v: label %q longer than 8 characters", r, l)
			}
		}
	}
}

func TestLinearLabels(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		b      Bounds
		want   string
	}{
		{[]float64{0.006789, 0.1434}, Free, "0 0.05 0.1 0.15"},
		{[]float64{0, 6069949}, FromZero, "0 2M 4M 6M 8M"},
		{[]float64{1500, 2300}, Free, "1.4k 1.6k 1.8k 2k 2.2k 2.4k"},
		{[]float64{-0.03, 0.17}, Free, "-0.05 0 0.05 0.1 0.15 0.2"},
		{[]float64{0.3, 0.7}, Unit, "0 0.2 0.4 0.6 0.8 1"},
		{[]float64{1e-6, 3e-6}, Free, "1e-6 1.5e-6 2e-6 2.5e-6 3e-6"},
		{[]float64{0.25}, Free, "0.22 0.23 0.24 0.25 0.26 0.27 0.28"},
		{[]float64{-0.4}, Free, "-0.44 -0.42 -0.4 -0.38 -0.36"},
		{nil, Free, "0 0.2 0.4 0.6 0.8 1"},
		{[]float64{0}, Free, "-0.6 -0.4 -0.2 0 0.2 0.4 0.6"},
		{[]float64{12}, FromZero, "0 5 10 15"},
		{[]float64{0.5, 1.2}, Unit, "0 0.5 1 1.5"},
		{[]float64{math.NaN(), 2, math.Inf(1), 4}, Free, "2 2.5 3 3.5 4"},
	} {
		got := strings.Join(labels(Linear(tc.values, 5, tc.b)), " ")
		if got != tc.want {
			t.Errorf("Linear(%v, %v) = %q, want %q", tc.values, tc.b, got, tc.want)
		}
	}
}

func TestSteps(t *testing.T) {
	for _, tc := range []struct {
		lo, hi   float64
		want     string
		min, max float64
	}{
		{0, 37, "0 5 10 15 20 25 30 35", 0, 37},
		{0, 399, "0 50 100 150 200 250 300 350", 0, 399},
		{0, 3, "0 1 2 3", 0, 3},
		{4, 4, "4", 3.5, 4.5},
		{0, 1, "0 1", 0, 1},
		{16, 384, "50 100 150 200 250 300 350", 16, 384},
		{0, 1200000, "0 0.2M 0.4M 0.6M 0.8M 1M 1.2M", 0, 1200000},
	} {
		a := Steps(tc.lo, tc.hi, 8)
		if got := strings.Join(labels(a), " "); got != tc.want || a.Min != tc.min || a.Max != tc.max {
			t.Errorf("Steps(%v, %v) = %q [%g, %g], want %q [%g, %g]", tc.lo, tc.hi, got, a.Min, a.Max, tc.want, tc.min, tc.max)
		}
		for _, tk := range a.Ticks {
			if tk.Value != math.Trunc(tk.Value) {
				t.Errorf("Steps(%v, %v): tick %g is not a whole number", tc.lo, tc.hi, tk.Value)
			}
		}
	}
	for hi := 1.0; hi < 5000; hi = math.Ceil(hi * 1.3) {
		a := Steps(0, hi, 8)
		if len(a.Ticks) > 9 || len(a.Ticks) < 2 {
			t.Errorf("Steps(0, %v): %d ticks", hi, len(a.Ticks))
		}
	}
}

func TestValue(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.75: "0.75", 6069949: "6.07M", 999.7: "1k", 5000: "5k", 2.5e-6: "2.5e-6",
		-0.1434: "-0.143", 12: "12", 1.5e9: "1.5G", math.NaN(): "—"} {
		if got := Value(v); got != want {
			t.Errorf("Value(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestWidth(t *testing.T) {
	a := Linear([]float64{-0.45, 0.1}, 5, Free)
	if a.Width() != len("-0.5") && a.Width() != len("-0.45") {
		t.Errorf("width %d for %v", a.Width(), labels(a))
	}
}
