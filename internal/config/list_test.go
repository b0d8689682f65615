package config

import (
	"slices"
	"testing"
)

// TestSplitList: items come back trimmed and in order, empty items are dropped, and a value with no
// item gives nil.
func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{
		"aime25,gpqa":         {"aime25", "gpqa"},
		" a , ,b,":            {"a", "b"},
		"http://h:1/v1":       {"http://h:1/v1"},
		"env_error,\ttimeout": {"env_error", "timeout"},
		"":                    nil,
		" , ,":                nil,
	} {
		if got := SplitList(in); !slices.Equal(got, want) || (want == nil) != (got == nil) {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}
