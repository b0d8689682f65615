// Package axis lays out a chart axis: the range, round tick values (1, 2 or 5 times a power of ten) and
// their labels, one unit per axis (k, M or G for large values, an exponent for tiny ones). The report's SVG
// and the viewer's charts (whose axes the server computes and sends with the data) both draw with it, so a
// figure reads the same on either page.
package axis

import (
	"math"
	"strconv"
	"strings"
)

// Tick is one labelled value of an axis.
type Tick struct {
	// Value is where the tick sits, in data units.
	Value float64 `json:"v"`
	// Label is the text written at the tick.
	Label string `json:"label"`
}

// Axis is a laid-out axis: data between Min and Max maps onto the plot, Ticks lie within [Min, Max].
type Axis struct {
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Ticks []Tick  `json:"ticks"`
}

// Bounds fixes an end of a value axis; NaN leaves it to the data.
type Bounds struct {
	// Lo and Hi are the fixed ends (NaN: from the data). A fixed end is kept even when the data lies past
	// it on the low side; on the high side the axis grows to the data (a rate above 1 stays visible).
	Lo, Hi float64
}

// Free leaves both ends to the data.
var Free = Bounds{math.NaN(), math.NaN()}

// FromZero starts the axis at 0 (counts, tokens, seconds).
var FromZero = Bounds{0, math.NaN()}

// Unit is the [0, 1] axis of a rate or share.
var Unit = Bounds{0, 1}

// Step returns the round step (1, 2 or 5 times a power of ten) that puts at most n intervals over a span.
func Step(span float64, n int) float64 {
	if !(span > 0) || math.IsInf(span, 0) {
		return 1
	}
	n = max(n, 1)
	base := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(base*m) <= float64(n)+1e-9 {
			return base * m
		}
	}
	return base * 10
}

// multiples returns the multiples of step within [lo, hi] up to rounding (0 as 0, never -0).
func multiples(lo, hi, step float64) []float64 {
	var out []float64
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if v == 0 {
			v = 0
		}
		out = append(out, v)
	}
	return out
}

// Linear lays out a value axis over the data values (NaN and ±Inf ignored) with about n intervals (5 when
// n < 1). The ends not fixed by b are the round ticks enclosing the data, so the extreme points sit on a
// labelled grid line. A single value (or none) gets a range around it, never a zero-width one: ±10% of
// the value (0..1 for 0, or for no data).
func Linear(values []float64, n int, b Bounds) Axis {
	if n < 1 {
		n = 5
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	if !math.IsNaN(b.Lo) {
		lo = b.Lo
		hi = math.Max(hi, lo)
	}
	if !math.IsNaN(b.Hi) {
		hi = math.Max(hi, b.Hi)
	}
	if hi == lo {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 0.5
		}
		if math.IsNaN(b.Lo) {
			lo -= pad
			if lo < 0 && hi > 0 { // a positive value's range does not dip below 0
				lo = 0
			}
		}
		hi += pad
	}
	step := Step(hi-lo, n)
	if math.IsNaN(b.Lo) {
		lo = math.Floor(lo/step+1e-9) * step
	}
	if math.IsNaN(b.Hi) || hi > b.Hi {
		hi = math.Ceil(hi/step-1e-9) * step
	}
	return Axis{Min: lo, Max: hi, Ticks: Labels(multiples(lo, hi, step), step)}
}

// Steps lays out an axis of whole numbers (steps, window starts) over [lo, hi] with at most n intervals
// (8 when n < 1): the ticks are whole multiples of a round step, so they are evenly spaced (0, 100, 200,
// never 0, 12, 25, 37), and the range is the data's own, or one unit around a single value so its tick
// sits in the middle.
func Steps(lo, hi float64, n int) Axis {
	if n < 1 {
		n = 8
	}
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		lo, hi = 0, 0
	}
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi <= lo {
		return Axis{Min: lo - 0.5, Max: lo + 0.5, Ticks: Labels([]float64{lo}, 1)}
	}
	step := math.Max(1, Step(hi-lo, n))
	return Axis{Min: lo, Max: hi, Ticks: Labels(multiples(lo, hi, step), step)}
}

// Labels writes tick values that lie step apart, all in one unit: the largest magnitude chooses k (1e3),
// M (1e6) or G (1e9) for values of a thousand and more, an exponent ("2.5e-6") below 0.001, plain
// decimals otherwise; each label has as many decimals as the step needs and no more (0.1 0.15 0.2 is
// written 0.1, 0.15, 0.2; 1500 2000 as 1.5k 2k), never trailing zeros and never "-0".
func Labels(values []float64, step float64) []Tick {
	top := 0.0
	for _, v := range values {
		top = math.Max(top, math.Abs(v))
	}
	out := make([]Tick, len(values))
	for i, v := range values {
		out[i] = Tick{Value: v, Label: format(v, step, top)}
	}
	return out
}

// Format writes one value the way an axis whose ticks lie step apart and reach top in magnitude would.
func Format(v, step, top float64) string { return format(v, step, top) }

func format(v, step, top float64) string {
	if v == 0 || math.Abs(v) < step*1e-6 {
		return "0"
	}
	scale, suffix := 1.0, ""
	switch {
	case top >= 999.5e6:
		scale, suffix = 1e9, "G"
	case top >= 999.5e3:
		scale, suffix = 1e6, "M"
	case top >= 999.5:
		scale, suffix = 1e3, "k"
	case top < 1e-3 && top > 0:
		return exponent(v, step)
	}
	return trim(strconv.FormatFloat(v/scale, 'f', decimals(step/scale), 64)) + suffix
}

// decimals is how many decimals a multiple of step needs (0.25 needs 2, 5 needs 0).
func decimals(step float64) int {
	if !(step > 0) {
		return 0
	}
	for d := 0; d < 12; d++ {
		scaled := step * math.Pow(10, float64(d))
		if math.Abs(scaled-math.Round(scaled)) < 1e-6*math.Max(1, scaled) {
			return d
		}
	}
	return 12
}

// exponent writes a tiny value as mantissa and exponent of ten ("2.5e-6"), the mantissa with the decimals
// the step needs at that exponent.
func exponent(v, step float64) string {
	e := math.Floor(math.Log10(math.Abs(v)))
	m := v / math.Pow(10, e)
	d := decimals(step / math.Pow(10, e))
	return trim(strconv.FormatFloat(m, 'f', min(d, 3), 64)) + "e" + strconv.Itoa(int(e))
}

// trim drops trailing zeros of a decimal ("1.50" → "1.5", "2.0" → "2") and a "-0" sign.
func trim(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}

// Value writes a single value (a point's label, a tooltip) in at most 3 significant digits with the same
// units as the axes: k, M, G from a thousand up, an exponent below 0.001.
func Value(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	a := math.Abs(v)
	if a == 0 {
		return "0"
	}
	if a < 1e-3 {
		e := math.Floor(math.Log10(a))
		return trim(strconv.FormatFloat(v/math.Pow(10, e), 'f', 2, 64)) + "e" + strconv.Itoa(int(e))
	}
	scale, suffix := 1.0, ""
	switch {
	case a >= 999.5e6:
		scale, suffix = 1e9, "G"
	case a >= 999.5e3:
		scale, suffix = 1e6, "M"
	case a >= 999.5:
		scale, suffix = 1e3, "k"
	}
	return trim(strconv.FormatFloat(v/scale, 'g', 3, 64)) + suffix
}

// Width is the widest label's length in characters, for the margin that keeps every label inside the
// chart (a negative tick is not cut at the left edge).
func (a Axis) Width() int {
	w := 0
	for _, t := range a.Ticks {
		w = max(w, len([]rune(t.Label)))
	}
	return w
}
