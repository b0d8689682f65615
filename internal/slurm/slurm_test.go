package slurm

import (
	"slices"
	"strings"
	"testing"
)

// TestIndicesAndExpand: array indices are written as sbatch's ranges, and squeue's compressed pending
// tasks are expanded back to one id per task.
func TestIndicesAndExpand(t *testing.T) {
	for idx, want := range map[string]string{"0": "0", "3,1,2": "1-3", "0,1,2,5,7,8": "0-2,5,7-8"} {
		var in []int
		for _, f := range strings.Split(idx, ",") {
			in = append(in, int(f[0]-'0'))
		}
		if got := Indices(in); got != want {
			t.Errorf("Indices(%v) = %q, want %q", in, got, want)
		}
	}
	for id, want := range map[string][]string{
		"123":           {"123"},
		"123_4":         {"123_4"},
		"123_[0-2,5%2]": {"123_0", "123_1", "123_2", "123_5"},
		"9_[7]":         {"9_7"},
	} {
		if got := expand(id); !slices.Equal(got, want) {
			t.Errorf("expand(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestJobArgs: a job's sbatch arguments carry its array, its afterok dependencies, its log and its
// resources.
func TestJobArgs(t *testing.T) {
	j := Job{Name: "r-s0-rollout", Array: []int{1, 3}, After: []string{"12", "13_0"}, Output: "/l/%A_%a.log", Args: []string{"--cpus-per-task=2"}}
	got := strings.Join(j.SbatchArgs(), " ")
	want := "--parsable --job-name=r-s0-rollout --output=/l/%A_%a.log --array=1,3 --dependency=afterok:12:13_0 --cpus-per-task=2"
	if got != want {
		t.Errorf("args %q, want %q", got, want)
	}
}

// TestStateClasses: which states count as active, stuck and failed.
func TestStateClasses(t *testing.T) {
	for _, c := range []struct {
		s                     State
		active, stuck, failed bool
	}{
		{State{State: "PENDING", Reason: "Dependency"}, true, false, false},
		{State{State: "PENDING", Reason: "DependencyNeverSatisfied"}, true, true, false},
		{State{State: "RUNNING"}, true, false, false},
		{State{State: "COMPLETED"}, false, false, false},
		{State{State: "CANCELLED"}, false, false, true},
		{State{State: "TIMEOUT"}, false, false, true},
		{State{}, false, false, false},
	} {
		if c.s.Active() != c.active || c.s.Stuck() != c.stuck || c.s.Failed() != c.failed {
			t.Errorf("%+v: active %v stuck %v failed %v", c.s, c.s.Active(), c.s.Stuck(), c.s.Failed())
		}
	}
}
