package duck

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spadekit/spade/internal/safetext"
)

// ValidFormat reports whether format is one Render accepts.
func ValidFormat(format string) bool {
	switch format {
	case "table", "csv", "json", "parquet":
		return true
	}
	return false
}

// Render runs query and writes its result to w as an aligned table (each cell on one line, control
// characters shown as escapes: safetext.Cell), CSV (with a header) or JSON (an array of objects); "parquet" writes outPath through DuckDB's COPY instead and needs a path.
func Render(ctx context.Context, db *sql.DB, query, format, outPath string, w io.Writer) error {
	query = strings.TrimRight(strings.TrimSpace(query), ";")
	if format == "parquet" {
		if outPath == "" {
			return fmt.Errorf("--format parquet needs --out FILE")
		}
		_, err := db.ExecContext(ctx, fmt.Sprintf("copy (%s) to %s (format parquet, compression zstd)", query, quote(outPath)))
		return err
	}
	cols, records, _, err := QueryRows(ctx, db, 0, query)
	if err != nil {
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
		// An array of objects whose keys keep the query's column order.
		var buf bytes.Buffer
		buf.WriteByte('[')
		for i, r := range records {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteByte('{')
			for j, c := range cols {
				if j > 0 {
					buf.WriteByte(',')
				}
				k, _ := json.Marshal(c)
				v, err := json.Marshal(JSONValue(r[j], nil))
				if err != nil {
					return fmt.Errorf("column %s: %w", c, err)
				}
				buf.Write(k)
				buf.WriteByte(':')
				buf.Write(v)
			}
			buf.WriteByte('}')
		}
		buf.WriteByte(']')
		var out bytes.Buffer
		if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
			return err
		}
		out.WriteByte('\n')
		_, err := w.Write(out.Bytes())
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	heads := make([]string, len(cols))
	for i, c := range cols {
		heads[i] = safetext.Cell(c)
	}
	fmt.Fprintln(tw, strings.Join(heads, "\t"))
	for _, r := range records {
		rec := make([]string, len(r))
		for i, v := range r {
			rec[i] = safetext.Cell(FormatValue(v)) // one line per row, and env text never acts on the terminal
		}
		fmt.Fprintln(tw, strings.Join(rec, "\t"))
	}
	return tw.Flush()
}

// QueryRows runs query with args and returns its column names and at most limit rows (0: every row),
// each value as the driver returns it (nil for NULL); truncated reports that a row beyond limit was left
// unread. A query without rows gives nil records. On any error it returns only the error.
func QueryRows(ctx context.Context, db *sql.DB, limit int, query string, args ...any) (cols []string, records [][]any, truncated bool, err error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, false, err
	}
	defer rows.Close()
	if cols, err = rows.Columns(); err != nil {
		return nil, nil, false, err
	}
	for rows.Next() {
		if limit > 0 && len(records) == limit {
			truncated = true
			break
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, false, err
		}
		records = append(records, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, err
	}
	return cols, records, truncated, nil
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

// JSONValue makes a SQL value one encoding/json writes faithfully, the module's one converter of them:
// lists and maps element by element; every other value through leaf when it is not nil (the viewer's
// makes text safe and DuckDB's wider numbers plain), then bytes as text and non-finite floats (which JSON
// cannot hold) as null.
func JSONValue(v any, leaf func(any) any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = JSONValue(e, leaf)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = JSONValue(e, leaf)
		}
		return out
	}
	if leaf != nil {
		v = leaf(v)
	}
	switch x := v.(type) {
	case []byte:
		return string(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	}
	return v
}
