package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/slurm"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// Record is one submission, stored in the lake beside the run (lake.PutJobRecord): the Slurm job that
// runs one stage of one step, as a job array of some of its shards or as a single job.
type Record struct {
	Step  int64  `json:"step"`
	Stage string `json:"stage"`
	// Job is Slurm's job id (of the array, for an array).
	Job string `json:"job"`
	// Shards is the stage's shard count at the step (1: one unsharded process).
	Shards int `json:"shards"`
	// Tasks are the array indices (= shards) submitted; empty for a single job.
	Tasks []int `json:"tasks,omitempty"`
	// After are the jobs and array tasks it waited for (afterok).
	After []string `json:"after,omitempty"`
	// Log is the job's --output pattern (%A the array's id, %a the index, %j the job's id).
	Log string `json:"log"`
	// SubmittedAt is when spade submitted it (RFC 3339, UTC).
	SubmittedAt string `json:"submitted_at"`
}

// Array reports whether the record is a job array.
func (r Record) Array() bool { return len(r.Tasks) > 0 }

// TaskID is the Slurm id of the record's process for shard (id_shard in an array, the job's id otherwise).
func (r Record) TaskID(shard int) string {
	if r.Array() {
		return r.Job + "_" + strconv.Itoa(shard)
	}
	return r.Job
}

// LogPath is the log file of the record's process for shard.
func (r Record) LogPath(shard int) string {
	return strings.NewReplacer("%A", r.Job, "%a", strconv.Itoa(shard), "%j", r.Job).Replace(r.Log)
}

// covers reports whether the record ran (or runs) shard of a stage with shards processes.
func (r Record) covers(shards, shard int) bool {
	if r.Shards != shards {
		return false
	}
	if shards == 1 {
		return !r.Array()
	}
	return slices.Contains(r.Tasks, shard)
}

// Records reads the run's submission records, oldest first.
func Records(ctx context.Context, lk *lake.Lake, run string) ([]Record, error) {
	bodies, err := lk.JobRecords(ctx, run)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(bodies))
	for _, b := range bodies {
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("cluster: a corrupt job record of run %s: %v", run, err)
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SubmittedAt < out[j].SubmittedAt })
	return out, nil
}

// SlurmOptions configure a submission.
type SlurmOptions struct {
	// LakeURI is the lake as the compute nodes reach it: s3://bucket/prefix or an absolute path on a
	// shared file system.
	LakeURI string
	// Shards is the number of array tasks of each fan-out stage (steprun.FanOut); < 1 counts as 1.
	Shards int
	// Command runs spade on the nodes (its words); LogDir is the absolute directory of the job logs.
	Command []string
	LogDir  string
	// Out receives what was submitted, reused, cancelled and found failed (nil: nothing).
	Out io.Writer
}

// Unit is one process of a plan task: a shard of a fan-out stage, or the single process of another.
type Unit struct {
	Step  int64
	Stage stage.Name
	// Shard is the shard index; Shards the stage's shard count (1: unsharded).
	Shard, Shards int
}

func (u Unit) String() string {
	if u.Shards > 1 {
		return fmt.Sprintf("step %d %s shard %d/%d", u.Step, u.Stage, u.Shard, u.Shards)
	}
	return fmt.Sprintf("step %d %s", u.Step, u.Stage)
}

// Failure is a process an earlier submission ran that ended without committing its work.
type Failure struct {
	Unit
	// Job is its Slurm id (id_shard in an array); State what Slurm says of it ("" when Slurm no longer
	// knows the job); Log its log file.
	Job, State, Log string
}

// SubmitReport says what a submission did.
type SubmitReport struct {
	// Submitted are the new records, in submission order.
	Submitted []Record
	// Reused are processes an earlier submission has pending or running, left as they are.
	Reused []Unit
	// Cancelled are the pending jobs that waited for work that failed (they could never start), by id.
	Cancelled []string
	// Failures are the earlier submission's processes that ended without committing.
	Failures []Failure
	// Committed counts the plan's tasks already committed.
	Committed int
}

// SubmitSlurm submits to Slurm, for the due stages of steps, every process whose work is not committed
// (nor done by a job Slurm reports COMPLETED) and that no earlier submission of the run still has
// pending or running: a fan-out stage (FanOut) as
// a job array of its missing shards (SLURM_ARRAY_TASK_ID is the shard), another stage as a single job,
// each waiting (afterok) for the jobs of the tasks it waits for in steprun.Plan. Resources come from
// the run's slurm.* settings. Each submission is recorded in the lake at once, so a second call submits
// nothing twice; a pending job of an earlier submission that waits for work submitted again now (its
// dependency failed) is cancelled and submitted again. Before anything is submitted, each stage's
// request is compared with the nodes sinfo reports (CheckFit): a request no node of its partition
// could ever hold returns a *FitError and submits nothing. Failures lists what earlier submissions ran that
// ended without committing, with Slurm's state and the log.
func SubmitSlurm(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, stages []stage.Stage, steps []int64, opts SlurmOptions) (SubmitReport, error) {
	var rep SubmitReport
	if len(opts.Command) == 0 {
		return rep, errors.New("cluster: no command to run spade on the nodes")
	}
	plan := steprun.Plan(cfg, stages, steps, opts.Shards)
	records, err := Records(ctx, lk, run)
	if err != nil {
		return rep, err
	}
	var ids []string
	for _, r := range records {
		ids = append(ids, r.Job)
	}
	states, err := slurm.Query(ctx, ids)
	if err != nil {
		return rep, err
	}
	// Every stage that may be submitted must fit some node of its partition before anything is.
	committed := make([]bool, len(plan))
	var names []stage.Name
	for i, t := range plan {
		if committed[i], err = lk.Committed(ctx, lake.PartitionKey{Run: run, Table: stage.Marker(t.Stage), Step: t.Step}); err != nil {
			return rep, err
		}
		if !committed[i] && !slices.Contains(names, t.Name()) {
			names = append(names, t.Name())
		}
	}
	if len(names) > 0 {
		nodes, err := slurm.Nodes(ctx)
		if err != nil {
			return rep, err
		}
		if err := CheckFit(cfg, names, nodes); err != nil {
			return rep, err
		}
	}
	wait := make([][]string, len(plan))    // per task: the Slurm ids its dependents wait for
	resubmitted := make([]bool, len(plan)) // per task: some process was submitted (again) now
	for i, t := range plan {
		name := t.Name()
		if committed[i] {
			rep.Committed++
			continue
		}
		shardsDone, err := lk.ShardsDone(ctx, run, string(name), t.Step, t.Shards)
		if err != nil {
			return rep, err
		}
		producerAgain := false
		for _, j := range t.After {
			producerAgain = producerAgain || resubmitted[j]
		}
		var need []int
		var cancel []string
		for shard := range t.Shards {
			if slices.Contains(shardsDone, shard) {
				continue
			}
			u := Unit{Step: t.Step, Stage: name, Shard: shard, Shards: t.Shards}
			last, ok := latest(records, t.Step, string(name), t.Shards, shard)
			if !ok {
				need = append(need, shard)
				continue
			}
			id := last.TaskID(shard)
			st := stateOf(states, last, shard)
			switch {
			case st.State == "COMPLETED":
				// The process exited 0, so its work is in the lake: the one sign of it for a stage that
				// commits only fragments (eval), whose marker is never a plain partition.
				continue
			case st.Active() && !st.Stuck() && !(st.State == "PENDING" && producerAgain):
				wait[i] = append(wait[i], id)
				rep.Reused = append(rep.Reused, u)
			case st.Active():
				cancel = append(cancel, id)
				need = append(need, shard)
			default:
				rep.Failures = append(rep.Failures, Failure{Unit: u, Job: id, State: st.State, Log: last.LogPath(shard)})
				need = append(need, shard)
			}
		}
		if len(cancel) > 0 {
			if err := slurm.Cancel(ctx, cancel); err != nil {
				return rep, err
			}
			rep.Cancelled = append(rep.Cancelled, cancel...)
		}
		if len(need) == 0 {
			continue
		}
		var after []string
		for _, j := range t.After {
			after = append(after, wait[j]...)
		}
		rec, err := submit(ctx, lk, run, cfg, t, need, after, opts)
		if err != nil {
			return rep, err
		}
		wait[i] = append(wait[i], rec.Job)
		resubmitted[i] = true
		rep.Submitted = append(rep.Submitted, rec)
	}
	if opts.Out != nil {
		rep.Print(opts.Out)
	}
	return rep, nil
}

// latest returns the newest record that covers shard of a stage at a step.
func latest(records []Record, step int64, stageName string, shards, shard int) (Record, bool) {
	for i := len(records) - 1; i >= 0; i-- {
		r := records[i]
		if r.Step == step && r.Stage == stageName && r.covers(shards, shard) {
			return r, true
		}
	}
	return Record{}, false
}

// stateOf is Slurm's state of a record's process for shard (zero when Slurm no longer knows it).
func stateOf(states map[string]slurm.State, r Record, shard int) slurm.State {
	return states[r.TaskID(shard)]
}

// submit submits shards of task t (all of a single job's one) and records the job in the lake.
func submit(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, t steprun.Task, shards []int, after []string, opts SlurmOptions) (Record, error) {
	name := string(t.Name())
	job := slurm.Job{Name: fmt.Sprintf("%s-s%d-%s", run, t.Step, name), After: after, Args: SbatchResources(cfg, t.Name())}
	cmd := append(append([]string(nil), opts.Command...), "--lake", opts.LakeURI, "--run", run, name, "--step", strconv.FormatInt(t.Step, 10))
	script := "#!/bin/bash\n# spade: run " + run + ", " + name + " of step " + strconv.FormatInt(t.Step, 10) + "\nexec " + shellJoin(cmd)
	if t.Shards > 1 {
		job.Array = shards
		job.Output = fmt.Sprintf("%s/%s-%%A_%%a.log", opts.LogDir, job.Name)
		script += ` --shard "$SLURM_ARRAY_TASK_ID" --shards ` + strconv.Itoa(t.Shards)
	} else {
		job.Output = fmt.Sprintf("%s/%s-%%j.log", opts.LogDir, job.Name)
	}
	job.Script = script + "\n"
	id, err := slurm.Submit(ctx, job)
	if err != nil {
		return Record{}, err
	}
	rec := Record{Step: t.Step, Stage: name, Job: id, Shards: t.Shards, After: after, Log: job.Output,
		SubmittedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if t.Shards > 1 {
		rec.Tasks = shards
	}
	body, _ := json.MarshalIndent(rec, "", "  ")
	if err := lk.PutJobRecord(context.WithoutCancel(ctx), run, fmt.Sprintf("%019d-%s", time.Now().UnixNano(), id), body); err != nil {
		return rec, fmt.Errorf("cluster: job %s is submitted but its record could not be stored (cancel it with scancel %s): %w", id, id, err)
	}
	return rec, nil
}

// Resources returns the run's slurm.* resources of a stage's jobs.
func Resources(cfg *config.Config, name stage.Name) config.SlurmJob {
	s := cfg.Slurm
	var job config.SlurmJob
	switch name {
	case stage.Sample:
		job = s.Sample
	case "pool":
		job = s.Pool
	case stage.Generate:
		job = s.Generate
	case stage.Gate:
		job = s.Gate
	case stage.Rollout:
		job = s.Rollout
	case stage.Regret:
		job = s.Regret
	case stage.GRPO:
		job = s.GRPO
		if job.Gres == "" && cfg.GRPO.Trainer == config.TrainerTorch {
			job.Gres = "gpu:" + strconv.Itoa(cfg.GRPO.TrainerGPUs)
		}
	case "eval":
		job = s.Eval
	}
	return job
}

// SbatchResources returns the sbatch arguments of a stage's resources (Resources).
func SbatchResources(cfg *config.Config, name stage.Name) []string {
	job := Resources(cfg, name)
	args := []string{"--cpus-per-task=" + strconv.Itoa(max(job.CPUs, 1))}
	for flag, v := range map[string]string{"--mem": job.Mem, "--gres": job.Gres, "--partition": job.Partition, "--time": job.Time, "--account": job.Account} {
		if v != "" {
			args = append(args, flag+"="+v)
		}
	}
	sort.Strings(args[1:])
	return append(args, config.SplitArgs(job.Args)...)
}

// shellJoin quotes words for bash.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@") == "" {
			q[i] = w
		} else {
			q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// Print writes the report: failures of earlier submissions with their state and log, cancelled jobs,
// then one line per job submitted.
func (r SubmitReport) Print(w io.Writer) {
	for _, f := range r.Failures {
		state := f.State
		if state == "" {
			state = "ended (Slurm no longer knows the job)"
		}
		fmt.Fprintf(w, "failed earlier: %s: job %s %s, log %s\n", f.Unit, f.Job, state, f.Log)
	}
	for _, id := range r.Cancelled {
		fmt.Fprintf(w, "cancelled: job %s (it waited for work that is submitted again)\n", id)
	}
	for _, rec := range r.Submitted {
		what := "job"
		if rec.Array() {
			what = fmt.Sprintf("array %s of %d shards", slurm.Indices(rec.Tasks), rec.Shards)
		}
		after := ""
		if len(rec.After) > 0 {
			after = " after " + strings.Join(rec.After, ",")
		}
		fmt.Fprintf(w, "submitted: step %d %s: %s %s%s\n", rec.Step, rec.Stage, what, rec.Job, after)
	}
	fmt.Fprintf(w, "%d submitted, %d still pending or running from earlier, %d already committed\n",
		len(r.Submitted), len(r.Reused), r.Committed)
}
