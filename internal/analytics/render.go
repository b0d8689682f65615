package analytics

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spadekit/spade/internal/duck"
)

// Render writes t as an aligned table, CSV (with a header) or JSON (an array of objects), like
// `spade query --format`. The table is for reading: floats show 4 significant digits (TableValue);
// CSV and JSON keep every digit.
func (t *Table) Render(w io.Writer, format string) error {
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(t.Columns)
		for _, r := range t.Rows {
			rec := make([]string, len(r))
			for i, v := range r {
				rec[i] = duck.FormatValue(v)
			}
			cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	case "json":
		out := make([]map[string]any, len(t.Rows))
		for i, r := range t.Rows {
			m := make(map[string]any, len(t.Columns))
			for j, c := range t.Columns {
				v := r[j]
				if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
					v = nil
				}
				m[c] = v
			}
			out[i] = m
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(t.Columns, "\t"))
		for _, r := range t.Rows {
			rec := make([]string, len(r))
			for i, v := range r {
				rec[i] = TableValue(v)
			}
			fmt.Fprintln(tw, strings.Join(rec, "\t"))
		}
		return tw.Flush()
	}
	return fmt.Errorf("unknown format %q (table, csv or json)", format)
}

// TableValue renders one value for a table read by a person: floats with 4 significant digits
// (0.49999999999999994 → 0.5, 1.3333333333333333 → 1.333), whole or large ones without a fraction and
// without an exponent (302026 rather than 3.02e+05); NULL stays NULL and non-finite floats say NaN/Inf.
func TableValue(v any) string {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	default:
		return duck.FormatValue(v)
	}
	switch a := math.Abs(f); {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fmt.Sprint(f)
	case a >= 1e4 || (f == math.Trunc(f) && a < 1e15):
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}
