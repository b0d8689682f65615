package duck

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestQueryRows: the columns and rows come back as the driver gives them (NULL as nil); a limit keeps
// that many rows and reports the rest as truncated; a query without rows gives nil records; a bad query
// is an error.
func TestQueryRows(t *testing.T) {
	db, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const q = "select i, case when i = 2 then null else 'r' || i end as s from range(3) t(i) where i >= ? order by i"
	cols, rows, truncated, err := QueryRows(ctx, db, 0, q, 0)
	want := [][]any{{int64(0), "r0"}, {int64(1), "r1"}, {int64(2), nil}}
	if err != nil || !reflect.DeepEqual(cols, []string{"i", "s"}) || !reflect.DeepEqual(rows, want) || truncated {
		t.Errorf("QueryRows(all) = %v, %v, %v, %v; want [i s], %v, false, nil", cols, rows, truncated, err, want)
	}
	if _, rows, truncated, err := QueryRows(ctx, db, 2, q, 0); err != nil || !reflect.DeepEqual(rows, want[:2]) || !truncated {
		t.Errorf("QueryRows(limit 2) = %v, %v, %v; want %v, true", rows, truncated, err, want[:2])
	}
	if _, rows, truncated, err := QueryRows(ctx, db, 3, q, 0); err != nil || len(rows) != 3 || truncated {
		t.Errorf("QueryRows(limit 3 of 3) = %v, %v, %v; want 3 rows, not truncated", rows, truncated, err)
	}
	if cols, rows, _, err := QueryRows(ctx, db, 0, q, 5); err != nil || rows != nil || len(cols) != 2 {
		t.Errorf("QueryRows(no rows) = %v, %v, %v; want 2 columns, nil records", cols, rows, err)
	}
	if _, _, _, err := QueryRows(ctx, db, 0, "select * from no_such_table"); err == nil {
		t.Error("QueryRows(bad SQL) = nil error")
	}
}

// The table format keeps one line per row and shows control characters as escapes (an observation's
// escape sequence never acts on the terminal of `spade query`); CSV and JSON keep the text as it is.
func TestRenderTableEscapesControlCharacters(t *testing.T) {
	db, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const q = `select chr(27) || '[2Jclear' || chr(10) || 'next' as obs`
	var table, csv strings.Builder
	if err := Render(ctx, db, q, "table", "", &table); err != nil {
		t.Fatal(err)
	}
	if want := "obs\n\\x1b[2Jclear\\nnext\n"; table.String() != want {
		t.Errorf("table %q, want %q", table.String(), want)
	}
	if err := Render(ctx, db, q, "csv", "", &csv); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csv.String(), "\x1b[2Jclear\nnext") {
		t.Errorf("csv %q lost the text as stored", csv.String())
	}
}
