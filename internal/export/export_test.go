package export_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/export"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/synth"
	"github.com/spadekit/spade/schemas"
)

// syntheticRun returns a lake holding a small synthetic run r1 (every table written through the real
// schemas).
func syntheticRun(t *testing.T) *lake.Lake {
	t.Helper()
	ctx := context.Background()
	lk, err := lake.Open(ctx, filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	o := synth.Small()
	o.Steps = 3
	if err := synth.Write(ctx, lk, "r1", o); err != nil {
		t.Fatal(err)
	}
	return lk
}

// TestRunWritesWhatQuerySees: every table of the run gets dest/<table>/data.parquet, and read back with
// a glob it holds exactly the rows of the table's view (as many, none missing, none extra), with a
// leading run column and step a BIGINT.
func TestRunWritesWhatQuerySees(t *testing.T) {
	ctx := context.Background()
	lk := syntheticRun(t)
	dest := filepath.Join(t.TempDir(), "export") // does not exist yet: Run creates it
	tables, err := export.Run(ctx, lk, "r1", dest)
	if err != nil {
		t.Fatal(err)
	}
	want := schemas.RunTables()
	sort.Strings(want)
	if !slices.Equal(tables, want) {
		t.Fatalf("tables written: %v, want %v", tables, want)
	}
	sess, err := duck.OpenRuns(ctx, lk, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	nonEmpty := 0
	for _, table := range tables {
		file := filepath.Join(dest, table, "data.parquet")
		if _, err := os.Stat(file); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		glob := "read_parquet('" + filepath.Join(dest, table, "*.parquet") + "')"
		var rows, exported, missing, extra int
		q := fmt.Sprintf(`select (select count(*) from %[1]s), (select count(*) from %[2]s),
			(select count(*) from (select * from %[1]s except all select * from %[2]s)),
			(select count(*) from (select * from %[2]s except all select * from %[1]s))`, table, glob)
		if err := sess.DB.QueryRowContext(ctx, q).Scan(&rows, &exported, &missing, &extra); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if rows != exported || missing != 0 || extra != 0 {
			t.Fatalf("%s: %d rows in the view, %d exported, %d missing, %d extra", table, rows, exported, missing, extra)
		}
		if rows > 0 {
			nonEmpty++
		}
		cols, err := sess.DB.QueryContext(ctx, "select column_name, column_type from (describe select * from "+glob+")")
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		var names []string
		for cols.Next() {
			var name, typ string
			if err := cols.Scan(&name, &typ); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
			if name == "step" && typ != "BIGINT" {
				t.Fatalf("%s: step is %s, want BIGINT", table, typ)
			}
		}
		cols.Close()
		if len(names) == 0 || names[0] != "run" {
			t.Fatalf("%s: columns %v, want run first", table, names)
		}
	}
	if nonEmpty < len(tables)/2 {
		t.Fatalf("only %d of %d tables have rows: the comparison says little", nonEmpty, len(tables))
	}
}

// TestRunRefusesANonEmptyDestination: a destination holding a file is refused with ErrNotEmpty, and
// nothing is written into it.
func TestRunRefusesANonEmptyDestination(t *testing.T) {
	lk := syntheticRun(t)
	dest := t.TempDir()
	if err := os.WriteFile(filepath.Join(dest, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := export.Run(context.Background(), lk, "r1", dest)
	if !errors.Is(err, export.ErrNotEmpty) || !strings.Contains(err.Error(), dest) {
		t.Fatalf("export into a non-empty directory: %v", err)
	}
	entries, _ := os.ReadDir(dest)
	if len(entries) != 1 {
		t.Fatalf("the refused export wrote into %s: %d entries", dest, len(entries))
	}
}
