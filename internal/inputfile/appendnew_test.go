package inputfile

import (
	"slices"
	"testing"
)

// TestAppendNew: rows whose id is already committed, or repeated in the input, are counted as skipped
// and left out; new ones are appended in input order after the existing rows.
func TestAppendNew(t *testing.T) {
	type row struct{ id, text string }
	id := func(r row) string { return r.id }
	existing := []row{{"b", "old b"}, {"a", "old a"}}
	incoming := []row{{"c", "c1"}, {"a", "new a"}, {"c", "c2"}, {"d", "d"}}
	merged, appended, skipped := AppendNew(existing, incoming, id)
	want := []row{{"b", "old b"}, {"a", "old a"}, {"c", "c1"}, {"d", "d"}}
	if !slices.Equal(merged, want) || appended != 2 || skipped != 2 {
		t.Errorf("AppendNew = %v, %d appended, %d skipped; want %v, 2, 2", merged, appended, skipped, want)
	}
	if merged, appended, skipped := AppendNew(nil, []row{{"x", "1"}, {"x", "2"}}, id); len(merged) != 1 || merged[0].text != "1" || appended != 1 || skipped != 1 {
		t.Errorf("AppendNew(nil, x x) = %v, %d, %d; want [x 1], 1, 1", merged, appended, skipped)
	}
}
