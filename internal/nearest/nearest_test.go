package nearest

import (
	"slices"
	"testing"
)

// TestDistance: hand-counted Levenshtein distances, including the empty string and a non-ASCII rune
// counted as one edit.
func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"kitten", "sitting", 3},
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"lake", "lake", 0},
		{"lkae", "lake", 2},
		{"ląke", "lake", 1},
		{"rollout.grup_size", "rollout.group_size", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

// TestClosest: names come closest first, ties in their given order, at most n of them.
func TestClosest(t *testing.T) {
	matches := []Match{{"c", 3}, {"a", 1}, {"d", 2}, {"b", 1}, {"e", 2}}
	if got, want := Closest(slices.Clone(matches), 3), []string{"a", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("Closest(3) = %q, want %q", got, want)
	}
	if got, want := Closest(slices.Clone(matches), 10), []string{"a", "b", "d", "e", "c"}; !slices.Equal(got, want) {
		t.Errorf("Closest(10) = %q, want %q", got, want)
	}
	if got := Closest(nil, 3); got != nil {
		t.Errorf("Closest(nil) = %q, want nil", got)
	}
}
