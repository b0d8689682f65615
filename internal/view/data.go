package view

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/safetext"
)

// Dataset is one query's result as the API returns it: the SQL that produced it (exactly what ran, so a
// page can show it or open it in the console), the columns, and the rows as JSON values.
type Dataset struct {
	SQL       string   `json:"sql"`
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated,omitempty"`
}

// query runs SQL and returns at most limit rows (0: all).
func query(ctx context.Context, db *sql.DB, text string, limit int) (*Dataset, error) {
	cols, rows, truncated, err := duck.QueryRows(ctx, db, limit, text)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{SQL: text, Columns: cols, Rows: [][]any{}, Truncated: truncated}
	for _, vals := range rows {
		for i, v := range vals {
			vals[i] = jsonValue(v)
		}
		ds.Rows = append(ds.Rows, vals)
	}
	return ds, nil
}

// jsonValue turns a driver value into one encoding/json writes faithfully (duck.JSONValue with
// viewLeaf): NaN and ±Inf become null, HUGEINT and DECIMAL numbers, nested lists and maps element by
// element; text has its control characters and bidi overrides shown as escapes (safetext.Terminal).
func jsonValue(v any) any { return duck.JSONValue(v, viewLeaf) }

// viewLeaf is the viewer's conversion of a value that is not a list or a map.
func viewLeaf(v any) any {
	switch x := v.(type) {
	case float32:
		return float64(x)
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		f, _ := new(big.Float).SetInt(x).Float64()
		return f
	case []byte:
		return safetext.Terminal(string(x))
	case string:
		return safetext.Terminal(x) // env text: no control character or bidi override acts on the page
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case interface{ Float64() float64 }: // DECIMAL
		return x.Float64()
	case nil, bool, float64, int64, int32, int16, int8, int, uint64, uint32, uint16, uint8:
		return x
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// record returns a one-row dataset's row as a map (nil when there is no row).
func (d *Dataset) record() map[string]any {
	if len(d.Rows) == 0 {
		return nil
	}
	m := make(map[string]any, len(d.Columns))
	for i, c := range d.Columns {
		m[c] = d.Rows[0][i]
	}
	return m
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Headers are out; the client sees a truncated body.
		fmt.Fprintf(w, "\n")
	}
}

// apiError is every error's JSON body.
type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apiError{Error: err.Error()})
}

// statusOf maps an error to a status code: a run or partition that is not there is 404, a query the
// console refuses 403, SQL that DuckDB rejects 400, anything else (storage) 500.
func statusOf(err error) int {
	switch {
	case errors.Is(err, lake.ErrNoRun), errors.Is(err, errNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrNotReadOnly):
		return http.StatusForbidden
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, errBadSQL):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

var (
	errNotFound = errors.New("not found")
	errBadSQL   = errors.New("SQL error")
)
