package analytics

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spade-rl/spade/internal/duck"
)

// Render writes t as an aligned table, CSV (with a header) or JSON (an array of objects), like
// `spade query --format`.
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
				rec[i] = duck.FormatValue(v)
			}
			fmt.Fprintln(tw, strings.Join(rec, "\t"))
		}
		return tw.Flush()
	}
	return fmt.Errorf("unknown format %q (table, csv or json)", format)
}
