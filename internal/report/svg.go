package report

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/axis"
)

// Series is one named sequence of (x, y) points of a chart; NaN y values are gaps.
type Series struct {
	// Name labels the series in the legend.
	Name string
	// X and Y are the coordinates, of equal length.
	X, Y []float64
	// Dashed draws the line dashed (e.g. a smoothed or reference series).
	Dashed bool
}

// palette holds colour-blind-safe series colours (Okabe–Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"}

const (
	chartW, chartH                     = 640, 300
	marginL, marginR, marginT, marginB = 64, 16, 50, 44
	// The title sits on its own row (baseline titleY) and the legend on the row below it (legendY is its
	// swatches' top), both above the plot, so a legend never covers a title, another legend or the data.
	titleY, legendY = 18, 28
)

// axes returns the SVG of the frame, ticks and labels for the laid-out x and y axes (internal/axis, shared
// with the viewer), plus the x and y mappings; a nil x axis draws no x ticks (a bar chart's categories).
func axes(title, xLabel, yLabel string, xa *axis.Axis, ya axis.Axis) (string, func(float64) float64, func(float64) float64) {
	x0, x1 := 0.0, 1.0
	if xa != nil {
		x0, x1 = xa.Min, xa.Max
	}
	y0, y1 := ya.Min, ya.Max
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	plotW, plotH := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	sx := func(x float64) float64 { return float64(marginL) + (x-x0)/(x1-x0)*plotW }
	sy := func(y float64) float64 { return float64(marginT) + (1-(y-y0)/(y1-y0))*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="title">%s</text>`, marginL, titleY, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" class="frame"/>`, marginL, marginT, plotW, plotH)
	for _, t := range ya.Ticks {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" class="grid"/>`, marginL, float64(marginL)+plotW, sy(t.Value), sy(t.Value))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, marginL-6, sy(t.Value)+4, html.EscapeString(t.Label))
	}
	if xa != nil {
		for _, t := range xa.Ticks {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="tick" text-anchor="middle">%s</text>`, sx(t.Value), float64(marginT)+plotH+16, html.EscapeString(t.Label))
		}
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" class="label" text-anchor="middle">%s</text>`, float64(marginL)+plotW/2, chartH-6, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="14" y="%.0f" class="label" text-anchor="middle" transform="rotate(-90 14 %.0f)">%s</text>`,
		float64(marginT)+plotH/2, float64(marginT)+plotH/2, html.EscapeString(yLabel))
	return b.String(), sx, sy
}

// exact writes a value for a tooltip: a whole number in full (6069949, not 6.07e+06), others to 4
// significant digits.
func exact(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// fmtTick writes a value beside its point in at most 3 significant digits, in the axes' units (k, M, G;
// never "5e+03"): axis.Value.
func fmtTick(t float64) string { return axis.Value(t) }

// legend draws the series names left to right on the row between the title and the plot, in a group of
// class "legend" (the page's layout check reads its boxes).
func legend(names []string) string {
	if len(names) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<g class="legend">`)
	x := marginL
	for i, name := range names {
		fmt.Fprintf(&b, `<g class="legend-item"><rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" class="tick">%s</text></g>`,
			x, legendY, palette[i%len(palette)], x+14, legendY+9, html.EscapeString(name))
		x += 14 + 7*len(name) + 16
	}
	b.WriteString(`</g>`)
	return b.String()
}

// LineChart returns an inline SVG line chart of the series (a marker on every point when a series has
// fewer than 40). yMin/yMax fix the y range when not NaN.
func LineChart(id, title, xLabel, yLabel string, series []Series, yMin, yMax float64) string {
	var xs, ys []float64
	intX := true
	for _, s := range series {
		for i := range s.X {
			intX = intX && s.X[i] == math.Trunc(s.X[i])
			if math.IsNaN(s.Y[i]) {
				continue
			}
			xs, ys = append(xs, s.X[i]), append(ys, s.Y[i])
		}
	}
	// The y range ends on round ticks, so the extreme points sit on a labelled grid line rather than on
	// an unlabelled frame edge (a short run's regret spans a few hundredths); one x value (a run shorter
	// than one window) is centred rather than pinned to the frame.
	ya := axis.Linear(ys, 5, axis.Bounds{Lo: yMin, Hi: yMax})
	var xa axis.Axis
	if intX {
		lo, hi := 0.0, 0.0
		if len(xs) > 0 {
			lo, hi = slices.Min(xs), slices.Max(xs)
		}
		xa = axis.Steps(lo, hi, 8)
	} else {
		xa = axis.Linear(xs, 8, axis.Free)
	}
	y0, y1 := ya.Min, ya.Max
	frame, sx, sy := axes(title, xLabel, yLabel, &xa, ya)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s">%s`,
		id, chartW, chartH, html.EscapeString(title), frame)
	if y0 < 0 && y1 > 0 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="zero"/>`, marginL, chartW-marginR, sy(0), sy(0))
	}
	names := make([]string, len(series))
	for k, s := range series {
		names[k] = s.Name
		colour := palette[k%len(palette)]
		var path strings.Builder
		pen := "M"
		points := 0
		for i := range s.X {
			if math.IsNaN(s.Y[i]) {
				pen = "M"
				continue
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", pen, sx(s.X[i]), sy(s.Y[i]))
			pen = "L"
			points++
		}
		if points == 1 { // a lone point draws no line: mark it with a short level dash
			for i := range s.X {
				if !math.IsNaN(s.Y[i]) {
					path.Reset()
					fmt.Fprintf(&path, "M%.1f %.1f L%.1f %.1f", sx(s.X[i])-12, sy(s.Y[i]), sx(s.X[i])+12, sy(s.Y[i]))
				}
			}
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&b, `<path class="series" d="%s" stroke="%s" fill="none" stroke-width="1.8"%s/>`, strings.TrimSpace(path.String()), colour, dash)
		if len(s.X) < 40 {
			r := 2.5
			if points <= 3 {
				r = 4.5 // a run of one or two windows: points, not a line, so make them plain to see
			}
			for i := range s.X {
				if !math.IsNaN(s.Y[i]) {
					fmt.Fprintf(&b, `<circle class="point" cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s: %s, %s</title></circle>`,
						sx(s.X[i]), sy(s.Y[i]), r, colour, html.EscapeString(s.Name), exact(s.X[i]), exact(s.Y[i]))
					if points <= 3 { // with so few points the values are the chart: write them beside the marks
						b.WriteString(valueLabel(sx(s.X[i]), sy(s.Y[i]), k, colour, fmtTick(s.Y[i])))
					}
				}
			}
		}
	}
	b.WriteString(legend(names))
	b.WriteString(`</svg>`)
	return b.String()
}

// valueLabel writes a point's value beside its mark at (px, py), the k-th series' label a row further
// out: above and to the right, but left of the mark near the right edge (past it the label would be cut
// to "0" for "0.75") and below it near the top (above the frame it would run into the legend row).
func valueLabel(px, py float64, k int, colour, text string) string {
	x, anchor := px+8, ""
	if px+8+7*float64(len(text)) > chartW-2 {
		x, anchor = px-8, ` text-anchor="end"`
	}
	y := py - 6 - float64(k)*13
	if y-11 < marginT {
		y = py + 16 + float64(k)*13
	}
	return fmt.Sprintf(`<text class="value" x="%.1f" y="%.1f" fill="%s"%s>%s</text>`, x, y, colour, anchor, html.EscapeString(text))
}

// BarChart returns an inline SVG grouped bar chart: one group per category, one bar per series (values[s][c]).
func BarChart(id, title, yLabel string, categories, seriesNames []string, values [][]float64) string {
	y1 := 0.0
	for _, vs := range values {
		for _, v := range vs {
			if !math.IsNaN(v) {
				y1 = math.Max(y1, v)
			}
		}
	}
	if y1 == 0 {
		y1 = 1
	}
	frame, _, sy := axes(title, "", yLabel, nil, axis.Linear([]float64{y1}, 5, axis.FromZero))
	plotW := float64(chartW - marginL - marginR)
	groupW := plotW / float64(max(len(categories), 1))
	barW := groupW * 0.8 / float64(max(len(seriesNames), 1))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s">%s`,
		id, chartW, chartH, html.EscapeString(title), frame)
	for c, cat := range categories {
		gx := float64(marginL) + float64(c)*groupW + groupW*0.1
		for s := range seriesNames {
			v := values[s][c]
			if math.IsNaN(v) {
				continue
			}
			top := sy(v)
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s</title></rect>`,
				gx+float64(s)*barW, top, math.Max(barW-1, 1), sy(0)-top, palette[s%len(palette)],
				html.EscapeString(cat), html.EscapeString(seriesNames[s]), exact(v))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>`, gx+groupW*0.4, chartH-marginB+16, html.EscapeString(cat))
	}
	b.WriteString(legend(seriesNames))
	b.WriteString(`</svg>`)
	return b.String()
}
