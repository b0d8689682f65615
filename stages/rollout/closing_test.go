package rollout

import "testing"

// TestEndedByText: the closing line's counts read "done 13, max_turns 35", in schemas order, empty
// counts left out.
func TestEndedByText(t *testing.T) {
	for _, tc := range []struct {
		counts map[string]int
		want   string
	}{
		{map[string]int{"max_turns": 35, "done": 13}, "done 13, max_turns 35"},
		{map[string]int{"timeout": 1, "done": 0, "agent_error": 2, "env_error": 3}, "env_error 3, timeout 1, agent_error 2"},
		{map[string]int{}, "none"},
	} {
		if got := endedByText(tc.counts); got != tc.want {
			t.Errorf("endedByText(%v) = %q, want %q", tc.counts, got, tc.want)
		}
	}
}
