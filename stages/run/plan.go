package run

import (
	"slices"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/stages/stage"
)

// FanOut names the stages a scheduler runs as one process per shard (a Slurm job array, a Kubernetes
// Indexed Job): those whose work splits by env, slot or benchmark chunk. The others run as one process
// per step (docs/many-machines.md).
var FanOut = []stage.Name{stage.Gate, stage.Rollout, "eval"}

// Task is one stage of one step in a Plan: a process per shard (Shards > 1) or one process.
type Task struct {
	Step  int64
	Stage stage.Stage
	// Shards is the number of shard processes: n for a FanOut stage, 1 for the others.
	Shards int
	// After are the indices, in the plan, of the tasks that must finish first.
	After []int
}

// Name returns the task's stage name.
func (t Task) Name() stage.Name { return t.Stage.Name() }

// Plan returns the due stages of steps (ascending, as ParseSteps returns them) as tasks in the order the
// in-process runner runs them, each with the tasks it must wait for: for every table the stage reads,
// the planned task that commits it at the step it is read at (the input's declared producer, or another
// planned stage that writes the table there, as pool writes envs in place of the gate); and, for a task
// with no producer at its own step, every task of the previous planned step that no task of that step
// waits for, so a step starts only once the one before has trained the weights it plays with. A producer
// outside the plan (an earlier step, another submission) is not waited for: its output must be
// committed before the task runs. FanOut stages get shards processes; shards < 1 counts as 1.
func Plan(cfg *config.Config, stages []stage.Stage, steps []int64, shards int) []Task {
	shards = max(shards, 1)
	var tasks []Task
	at := map[int64]map[stage.Name]int{}
	var prevStep []int
	for _, step := range steps {
		var this []int
		at[step] = map[stage.Name]int{}
		for _, s := range stages {
			if !s.Due(cfg, step) {
				continue
			}
			t := Task{Step: step, Stage: s, Shards: 1}
			if slices.Contains(FanOut, s.Name()) {
				t.Shards = shards
			}
			sameStep := false
			for _, in := range s.Reads() {
				from := step
				if in.At == stage.PoolStart {
					from = cfg.PoolStep(step)
				}
				i, ok := producer(tasks, at[from], in)
				if !ok {
					continue
				}
				if !slices.Contains(t.After, i) {
					t.After = append(t.After, i)
				}
				sameStep = sameStep || from == step
			}
			if !sameStep {
				for _, i := range sinks(tasks, prevStep) {
					if !slices.Contains(t.After, i) {
						t.After = append(t.After, i)
					}
				}
			}
			slices.Sort(t.After)
			at[step][s.Name()] = len(tasks)
			this = append(this, len(tasks))
			tasks = append(tasks, t)
		}
		if len(this) > 0 {
			prevStep = this
		}
	}
	return tasks
}

// producer finds the planned task (among byName, one step's tasks) that commits in's table: the declared
// producer, else a stage that lists the table among its writes.
func producer(tasks []Task, byName map[stage.Name]int, in stage.Input) (int, bool) {
	if i, ok := byName[in.From]; ok {
		return i, true
	}
	best := -1
	for _, i := range byName {
		if slices.Contains(tasks[i].Stage.Writes(), in.Table) && (best < 0 || i < best) {
			best = i
		}
	}
	return best, best >= 0
}

// sinks returns the tasks of step (indices) that no other task of step waits for.
func sinks(tasks []Task, step []int) []int {
	waited := map[int]bool{}
	for _, i := range step {
		for _, j := range tasks[i].After {
			waited[j] = true
		}
	}
	var out []int
	for _, i := range step {
		if !waited[i] {
			out = append(out, i)
		}
	}
	return out
}
