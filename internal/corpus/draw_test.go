package corpus

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spadekit/spade/schemas"
)

// The authors' draw is uniform and with replacement: over many (step, slot) draws every document comes up
// about equally often, documents repeat within one step, the result does not depend on the corpus's
// stored order, and a draw is a function of (seed, step, slot, attempt).
func TestDrawWithReplacementIsUniformAndRepeats(t *testing.T) {
	const n = 10
	var docs []schemas.CorpusRow
	for i := range n {
		docs = append(docs, schemas.CorpusRow{DocID: fmt.Sprintf("d%02d", i)})
	}
	reversed := make([]schemas.CorpusRow, n)
	for i := range docs {
		reversed[n-1-i] = docs[i]
	}
	counts := map[string]int{}
	repeats := 0
	const steps, slots = 500, 24
	for step := range int64(steps) {
		seen := map[string]bool{}
		for slot := range int32(slots) {
			d := DrawWithReplacement(docs, 7, step, slot, 1)
			if r := DrawWithReplacement(reversed, 7, step, slot, 1); r.DocID != d.DocID {
				t.Fatalf("step %d slot %d: %s from one order, %s from another", step, slot, d.DocID, r.DocID)
			}
			if seen[d.DocID] {
				repeats++
			}
			seen[d.DocID] = true
			counts[d.DocID]++
		}
	}
	if repeats == 0 {
		t.Error("24 draws from 10 documents never repeated one: not with replacement")
	}
	// Each count is Binomial(12000, 0.1): mean 1200, sd ≈ 32.9; 6 sd is a bound no fair draw breaks.
	for _, d := range docs {
		if c := counts[d.DocID]; math.Abs(float64(c)-1200) > 6*32.9 {
			t.Errorf("%s drawn %d times in 12000, want about 1200", d.DocID, c)
		}
	}
	a, b := DrawWithReplacement(docs, 7, 3, 4, 2), DrawWithReplacement(docs, 7, 3, 4, 2)
	if a.DocID != b.DocID {
		t.Error("the same (seed, step, slot, attempt) drew two documents")
	}
	differs := false
	for attempt := int32(2); attempt < 12; attempt++ {
		differs = differs || DrawWithReplacement(docs, 7, 3, 4, attempt).DocID != DrawWithReplacement(docs, 7, 3, 4, 1).DocID
	}
	if !differs {
		t.Error("ten resampled attempts all drew attempt 1's document")
	}
}

// The authors' loader cuts a long document to its first N words joined by single spaces, then a marker
// line; a document of at most N words keeps its text, whitespace and all.
func TestMarkedExcerpt(t *testing.T) {
	cases := []struct {
		text  string
		words int
		want  string
	}{
		{"one  two\n\nthree four five", 3, "one two three\n[Document truncated at ~3 words]"},
		{"one  two\n\nthree", 3, "one  two\n\nthree"},
		{"  lead\tand trail  ", 1, "lead\n[Document truncated at ~1 words]"},
		{"a b c", 0, "a b c"},
	}
	for _, c := range cases {
		if got := MarkedExcerpt(c.text, 0, c.words); got != c.want {
			t.Errorf("MarkedExcerpt(%q, %d words) = %q, want %q", c.text, c.words, got, c.want)
		}
	}
	if got := Cut("one  two three", 0, 2, false); got != "one  two" {
		t.Errorf("plain cut = %q, want the text up to the second word", got)
	}
	if got := Cut(strings.Repeat("w ", 10), 0, 2, true); got != "w w\n[Document truncated at ~2 words]" {
		t.Errorf("marked cut = %q", got)
	}
}
