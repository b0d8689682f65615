package run

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// TestStageTableIsTheStages: the stage table of docs/architecture.md, "Stages", has one row per stage of
// Stages, in its order, and each row's reads and writes columns name the tables of the stage's Reads and
// Writes, in order (backquoted table names; other backquoted words are not tables).
func TestStageTableIsTheStages(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(doc), "\n## Stages\n")
	if !ok {
		t.Fatal("docs/architecture.md has no \"## Stages\" section")
	}
	body, _, _ = strings.Cut(body, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\|(.*)\\|$")
	type documented struct{ reads, writes []string }
	table := map[string]documented{}
	var order []string
	for _, m := range row.FindAllStringSubmatch(body, -1) {
		cells := strings.Split(m[2], " | ")
		if len(cells) != 3 {
			t.Fatalf("stage row %q has %d cells after the name, want 3 (due, reads, writes)", m[0], len(cells))
		}
		order = append(order, m[1])
		table[m[1]] = documented{reads: tablesIn(cells[1]), writes: tablesIn(cells[2])}
	}
	var want []string
	for _, s := range Stages() {
		name := string(s.Name())
		want = append(want, name)
		doc, found := table[name]
		if !found {
			continue
		}
		var reads []string
		for _, in := range s.Reads() {
			reads = append(reads, in.Table)
		}
		if !slices.Equal(doc.reads, reads) {
			t.Errorf("stage %s: the table says it reads %v, Reads() is %v", name, doc.reads, reads)
		}
		if !slices.Equal(doc.writes, s.Writes()) {
			t.Errorf("stage %s: the table says it writes %v, Writes() is %v (marker %s)", name, doc.writes, s.Writes(), stage.Marker(s))
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("the stage table lists %v, Stages() runs %v", order, want)
	}
}

// tablesIn returns the backquoted table names of a table cell, in order.
func tablesIn(cell string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cell, -1) {
		if _, ok := schemas.Lookup(m[1]); ok {
			out = append(out, m[1])
		}
	}
	return out
}
