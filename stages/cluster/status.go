package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/slurm"
	"github.com/spadekit/spade/stages/stage"
)

// TaskState is what Slurm says of one process of a stage at a step, from its newest submission.
type TaskState struct {
	// Shard is the shard index (0 for an unsharded stage); Job its Slurm id (id_shard in an array).
	Shard int
	Job   string
	// State is Slurm's state ("" when neither squeue nor sacct knows the job any more).
	State string
	// Reason is squeue's reason for a pending job.
	Reason string
	// Blocked says, for a pending task whose reason will not clear by itself (a hold, a failed
	// dependency, a request outside the partition's limits, or a wait for nodes no node could ever
	// satisfy), why it will not start and what to change; "" otherwise.
	Blocked string
	// Log is the process's log file.
	Log string
	// Done reports that the lake has the shard's work (its shard marker is complete, or the stage is
	// committed).
	Done bool
}

// StageStatus is one stage of one step: its commit state in the lake and its submitted processes.
type StageStatus struct {
	Step  int64
	Stage stage.Name
	// Committed reports that the stage's marker partition is committed at the step.
	Committed bool
	// Shards is the shard count of its newest submission (0: never submitted); ShardsDone how many of
	// them the lake has.
	Shards, ShardsDone int
	// Tasks are its processes as the newest submission of each shard left them.
	Tasks []TaskState
}

// Status returns, for each step of steps (nil: every step the run has committed work at or a
// submission for) and each stage due there, its commit state and the Slurm state of what was submitted
// for it: squeue's while the controller holds the job, sacct's where the cluster keeps accounting, and
// otherwise only what the lake's records say (the job id and the log). A pending task whose reason
// will not clear by itself carries what to change (TaskState.Blocked); for a wait for nodes, sinfo
// tells whether any node could ever hold the stage's request. Without Slurm's commands on PATH only
// the lake's records are shown.
func Status(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, stages []stage.Stage, steps []int64) ([]StageStatus, error) {
	records, err := Records(ctx, lk, run)
	if err != nil {
		return nil, err
	}
	if steps == nil {
		seen := map[int64]bool{}
		for _, r := range records {
			seen[r.Step] = true
		}
		for _, s := range stages {
			committed, err := lk.Steps(ctx, run, stage.Marker(s))
			if err != nil {
				return nil, err
			}
			for _, step := range committed {
				seen[step] = true
			}
		}
		for step := range seen {
			steps = append(steps, step)
		}
		slices.Sort(steps)
	}
	var ids []string
	for _, r := range records {
		ids = append(ids, r.Job)
	}
	states, err := slurm.Query(ctx, ids)
	if err != nil {
		states = map[string]slurm.State{} // no Slurm here: the lake's records alone
	}
	// sinfo is asked once, and only when some task waits: it tells a wait no node could ever end.
	var nodes []slurm.Node
	nodesAsked := false
	nodesFor := func() []slurm.Node {
		if !nodesAsked {
			nodesAsked = true
			nodes, _ = slurm.Nodes(ctx) // unreachable: reasons alone decide
		}
		return nodes
	}
	var out []StageStatus
	for _, step := range steps {
		for _, s := range stages {
			if !s.Due(cfg, step) {
				continue
			}
			st := StageStatus{Step: step, Stage: s.Name()}
			if st.Committed, err = lk.Committed(ctx, lake.PartitionKey{Run: run, Table: stage.Marker(s), Step: step}); err != nil {
				return nil, err
			}
			var newest *Record
			for i := len(records) - 1; i >= 0; i-- {
				if records[i].Step == step && records[i].Stage == string(s.Name()) {
					newest = &records[i]
					break
				}
			}
			if newest != nil {
				st.Shards = newest.Shards
				done, err := lk.ShardsDone(ctx, run, string(s.Name()), step, st.Shards)
				if err != nil {
					return nil, err
				}
				for shard := range st.Shards {
					last, ok := latest(records, step, string(s.Name()), st.Shards, shard)
					if !ok {
						continue
					}
					sl := stateOf(states, last, shard)
					ts := TaskState{Shard: shard, Job: last.TaskID(shard), State: sl.State, Reason: sl.Reason, Log: last.LogPath(shard),
						Done: st.Committed || slices.Contains(done, shard)}
					if sl.State == "PENDING" && !ts.Done {
						var n []slurm.Node
						if slurm.MayWaitForNodes(sl.Reason) || sl.Reason == "PartitionConfig" {
							n = nodesFor()
						}
						ts.Blocked = pendingAdvice(cfg, s.Name(), ts.Job, sl.Reason, n)
					}
					if ts.Done {
						st.ShardsDone++
					}
					st.Tasks = append(st.Tasks, ts)
				}
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// PrintStatus writes the status as a table: step, stage, the lake's commit state, the Slurm jobs with
// their states (a pending task's reason in parentheses, marked "!" when it will not clear by itself),
// and the log of every process that ended without its work in the lake; then one "will not start:"
// line per job pending for a reason that will not clear, saying what to change.
func PrintStatus(w io.Writer, sts []StageStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "step\tstage\tlake\tjob\tslurm\tlog of a failed task")
	for _, st := range sts {
		lakeState := "not committed"
		switch {
		case st.Committed:
			lakeState = "committed"
		case st.Shards > 1:
			lakeState = fmt.Sprintf("%d of %d shards", st.ShardsDone, st.Shards)
		}
		var jobs, slurmStates, logs []string
		for _, ts := range st.Tasks {
			if !slices.Contains(jobs, jobOf(ts.Job)) {
				jobs = append(jobs, jobOf(ts.Job))
			}
			state := ts.State
			if state == "" {
				state = "gone from Slurm"
				if ts.Done {
					state = "ended"
				}
			}
			if ts.Reason != "" && ts.Reason != "None" && ts.State == "PENDING" {
				state += " (" + ts.Reason + ")"
				if ts.Blocked != "" {
					state += "!"
				}
			}
			if st.Shards > 1 {
				state = fmt.Sprintf("%d:%s", ts.Shard, state)
			}
			slurmStates = append(slurmStates, state)
			if !ts.Done && !(slurm.State{State: ts.State}).Active() {
				logs = append(logs, ts.Log)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", st.Step, st.Stage, lakeState, orDash(strings.Join(jobs, ",")),
			orDash(strings.Join(slurmStates, " ")), strings.Join(logs, " "))
	}
	tw.Flush()
	// One line per job and advice: the tasks of an array held for one reason share it.
	seen := map[string]bool{}
	for _, st := range sts {
		for _, ts := range st.Tasks {
			if ts.Blocked == "" || seen[jobOf(ts.Job)+ts.Blocked] {
				continue
			}
			seen[jobOf(ts.Job)+ts.Blocked] = true
			fmt.Fprintf(w, "will not start: step %d %s, job %s pending (%s): %s\n", st.Step, st.Stage, jobOf(ts.Job), ts.Reason, ts.Blocked)
		}
	}
}

func jobOf(id string) string {
	base, _, _ := strings.Cut(id, "_")
	return base
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
