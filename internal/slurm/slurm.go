// Package slurm drives a Slurm cluster through its commands (sbatch, squeue, sacct, scancel, sinfo): it
// submits batch jobs and job arrays with afterok dependencies, reads the state of jobs and array tasks,
// cancels them, and compares a request with the nodes of its partitions. It knows nothing of spade's
// stages; SLURM_CONF and the rest of the environment reach the commands unchanged.
package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// Job is one sbatch submission: a batch script run once, or once per index of Array.
type Job struct {
	// Name is the job's --job-name.
	Name string
	// Script is the batch script (starting with #!), given to sbatch on its standard input.
	Script string
	// Array lists the array indices to run; nil submits a single job.
	Array []int
	// After lists the jobs (an id, or id_index for one array task) that must all complete successfully
	// before this one starts (--dependency=afterok).
	After []string
	// Output is the --output pattern of the job's log (%j, %A, %a expand as sbatch says).
	Output string
	// Args are further sbatch arguments (resources).
	Args []string
}

// SbatchArgs returns the sbatch arguments that submit j (the script comes on standard input).
func (j Job) SbatchArgs() []string {
	args := []string{"--parsable", "--job-name=" + j.Name}
	if j.Output != "" {
		args = append(args, "--output="+j.Output)
	}
	if len(j.Array) > 0 {
		args = append(args, "--array="+Indices(j.Array))
	}
	if len(j.After) > 0 {
		args = append(args, "--dependency=afterok:"+strings.Join(j.After, ":"))
	}
	return append(args, j.Args...)
}

// Indices writes array indices in sbatch's --array form: ascending, runs as ranges ("0-3,5").
func Indices(idx []int) string {
	s := append([]int(nil), idx...)
	sort.Ints(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		} else {
			parts = append(parts, strconv.Itoa(s[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Submit submits j with sbatch and returns its job id.
func Submit(ctx context.Context, j Job) (string, error) {
	cmd := exec.CommandContext(ctx, "sbatch", j.SbatchArgs()...)
	cmd.Stdin = strings.NewReader(j.Script)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("slurm: sbatch %s: %v: %s", j.Name, err, strings.TrimSpace(errOut.String()))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out.String()), ";") // --parsable: id[;cluster]
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("slurm: sbatch %s printed %q, not a job id", j.Name, out.String())
	}
	return id, nil
}

// State is what Slurm says of one job or array task.
type State struct {
	// State is Slurm's job state (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...).
	State string
	// Reason is squeue's reason for a pending job (DependencyNeverSatisfied, Resources, ...).
	Reason string
	// From names the command that knew the job: "squeue" or "sacct".
	From string
}

// Active reports whether the job has not ended: it will run, is running, or is finishing.
func (s State) Active() bool {
	switch s.State {
	case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED":
		return true
	}
	return false
}

// Stuck reports whether a pending job can never start because a job it depends on did not succeed.
func (s State) Stuck() bool { return s.State == "PENDING" && s.Reason == "DependencyNeverSatisfied" }

// Failed reports whether the job ended without success.
func (s State) Failed() bool {
	return s.State != "" && !s.Active() && s.State != "COMPLETED"
}

// Query returns the state of every job and array task Slurm still knows among ids (job ids; array
// tasks are keyed id_index): squeue for the jobs the controller holds (running ones and those ended
// within its MinJobAge), then sacct, where the cluster keeps accounting, for the others. A job neither
// knows is absent.
func Query(ctx context.Context, ids []string) (map[string]State, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := map[string]State{}
	if len(want) == 0 {
		return out, nil
	}
	body, err := exec.CommandContext(ctx, "squeue", "--noheader", "--array", "--states=all", "--format=%i|%T|%r").Output()
	if err != nil {
		return nil, fmt.Errorf("slurm: squeue: %v%s", err, stderrOf(err))
	}
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			continue
		}
		for _, id := range expand(f[0]) {
			if want[baseID(id)] {
				out[id] = State{State: f[1], Reason: f[2], From: "squeue"}
			}
		}
	}
	var missing []string
	for id := range want {
		if !knows(out, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	sort.Strings(missing)
	// Without accounting (AccountingStorageType none) sacct fails: the controller's view is all there is.
	body, err = exec.CommandContext(ctx, "sacct", "--noheader", "--parsable2", "--allocations", "--format=JobID,State",
		"--jobs="+strings.Join(missing, ",")).Output()
	if err != nil {
		return out, nil
	}
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 2 {
			continue
		}
		state, _, _ := strings.Cut(f[1], " ") // "CANCELLED by 0"
		for _, id := range expand(f[0]) {
			if want[baseID(id)] {
				out[id] = State{State: state, From: "sacct"}
			}
		}
	}
	return out, nil
}

// Cancel cancels jobs and array tasks (id or id_index) with scancel.
func Cancel(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "scancel", ids...).CombinedOutput(); err != nil {
		return fmt.Errorf("slurm: scancel %s: %v: %s", strings.Join(ids, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// knows reports whether states holds id, or, for a job array id, any of its tasks.
func knows(states map[string]State, id string) bool {
	if _, ok := states[id]; ok {
		return true
	}
	for k := range states {
		if baseID(k) == id {
			return true
		}
	}
	return false
}

// baseID is the job id of an array task id (123 of 123_4).
func baseID(id string) string {
	base, _, _ := strings.Cut(id, "_")
	return base
}

// expand turns squeue's and sacct's forms of an array's pending tasks ("123_[0-3,5%2]") into one id per
// task; any other id is returned as it is.
func expand(id string) []string {
	base, rest, ok := strings.Cut(id, "_[")
	if !ok {
		return []string{id}
	}
	rest = strings.TrimSuffix(rest, "]")
	rest, _, _ = strings.Cut(rest, "%")
	var out []string
	for _, part := range strings.Split(rest, ",") {
		a, b, isRange := strings.Cut(part, "-")
		from, err1 := strconv.Atoi(a)
		to := from
		var err2 error
		if isRange {
			to, err2 = strconv.Atoi(b)
		}
		if err1 != nil || err2 != nil {
			continue
		}
		for i := from; i <= to; i++ {
			out = append(out, base+"_"+strconv.Itoa(i))
		}
	}
	return out
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
