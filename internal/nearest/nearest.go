// Package nearest finds the names closest to a mistyped one, for the "did you mean" part of an error
// message: the edit distance and the ordering of candidates. Which names are candidates, and how far is
// too far, is each caller's policy.
package nearest

import "sort"

// Distance returns the Levenshtein distance between a and b: the fewest single-rune insertions,
// deletions and substitutions that turn a into b. It counts runes, so a non-ASCII letter is one edit.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev, cur := make([]int, len(rb)+1), make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Match is a candidate name and its distance from the name that was asked for.
type Match struct {
	// Name is the candidate as the message should show it.
	Name string
	// Dist is its distance (Distance, or the caller's own measure); smaller is closer.
	Dist int
}

// Closest returns the names of at most n of matches, closest first; matches at the same distance keep
// the order they were given in. It reorders matches in place. Nil or empty matches give nil.
func Closest(matches []Match, n int) []string {
	sort.SliceStable(matches, func(i, j int) bool { return matches[i].Dist < matches[j].Dist })
	var out []string
	for _, m := range matches[:min(n, len(matches))] {
		out = append(out, m.Name)
	}
	return out
}
