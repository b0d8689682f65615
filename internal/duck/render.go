package duck

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// ValidFormat reports whether format is one Render accepts.
func ValidFormat(format string) bool {
	switch format {
	case "table", "csv", "json", "parquet":
		return true
	}
	return false
}

// Render runs query and writes its result to w as an aligned table, CSV (with a header) or JSON (an
// array of objects); "parquet" writes outPath through DuckDB's COPY instead and needs a path.
func Render(ctx context.Context, db *sql.DB, query, format, outPath string, w io.Writer) error {
	query = strings.TrimRight(strings.TrimSpace(query), ";")
	if format == "parquet" {
		if outPath == "" {
			return fmt.Errorf("--format parquet needs --out FILE")
		}
		_, err := db.ExecContext(ctx, fmt.Sprintf("copy (%s) to %s (format parquet, compression zstd)", query, quote(outPath)))
		return err
	}
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	var records [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		records = append(records, vals)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(cols)
		for _, r := range records {
			rec := make([]string, len(r))
			for i, v := range r {
				rec[i] = FormatValue(v)
			}
			cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	case "json":
		out := make([]map[string]any, len(records))
		for i, r := range records {
			m := make(map[string]any, len(cols))
			for j, c := range cols {
				m[c] = jsonValue(r[j])
			}
			out[i] = m
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range records {
		rec := make([]string, len(r))
		for i, v := range r {
			rec[i] = FormatValue(v)
		}
		fmt.Fprintln(tw, strings.Join(rec, "\t"))
	}
	return tw.Flush()
}

// FormatValue renders one SQL value as text: NULL for nil, floats in their shortest exact form.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(x)
	case float64:
		return fmt.Sprint(x)
	case float32:
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	}
	return v
}
