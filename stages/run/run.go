package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/stages/stage"
)

// Options configure a run of steps.
type Options struct {
	// Stages are the stages to run, in order (see Stages for the real ones).
	Stages []stage.Stage
	// Out receives the per-stage time table (nil: none).
	Out io.Writer
	// Log receives progress; nil discards it.
	Log *slog.Logger
	// StepLines, when set, receives one line per step once its stages are done (StepSummary.Line):
	// accepted envs, solve rates, regret, loss, tokens and time.
	StepLines io.Writer
	// AfterStep, when set, is called once a step's stages are done (or found done), with its summary;
	// an error stops the run (a step's outputs are committed by then).
	AfterStep func(ctx context.Context, s StepSummary) error
}

// Timing is one stage's line of the time table.
type Timing struct {
	Stage stage.Name
	// Ran counts the steps at which the stage ran; Skipped those at which it was already done.
	Ran, Skipped int
	// Total is the wall time spent running it.
	Total time.Duration
}

// Report says what a run of steps did.
type Report struct {
	// Steps counts the steps completed by this call (all due stages done); Resumed those found complete.
	Steps, Resumed int
	// Timings has one entry per stage, in stage order.
	Timings []Timing
	// Wall is the whole call's wall time.
	Wall time.Duration
}

// StepsGrammar is the --steps grammar, for messages and help: comma-separated steps and inclusive ranges.
const StepsGrammar = "a step A, a range A-B (A <= B, inclusive) or a comma-separated list of both, e.g. 0-3,8,10-11"

// MaxSteps bounds how many steps one --steps may name.
const MaxSteps = 1_000_000

// ParseSteps parses the --steps grammar: items separated by commas, each a step "A" or an inclusive range
// "A-B", where A and B are non-negative decimal integers and A <= B (spaces around items are allowed).
// It returns the steps named, ascending and without repeats; anything else ("1..3", "3x", "1,,2", "-1",
// "7-0") is an error saying what was wrong.
func ParseSteps(s string) ([]int64, error) {
	bad := func(why string) error {
		return fmt.Errorf("--steps %q: %s; want %s", s, why, StepsGrammar)
	}
	if strings.TrimSpace(s) == "" {
		return nil, bad("empty")
	}
	seen := map[int64]bool{}
	var steps []int64
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, bad("an empty item")
		}
		a, b, isRange := strings.Cut(item, "-")
		from, err := parseStep(a)
		if err != nil {
			return nil, bad(fmt.Sprintf("%q is not a step", item))
		}
		to := from
		if isRange {
			if to, err = parseStep(b); err != nil {
				return nil, bad(fmt.Sprintf("%q is not a range", item))
			}
			if to < from {
				return nil, bad(fmt.Sprintf("range %q ends before it starts", item))
			}
		}
		if to-from >= MaxSteps || len(steps)+int(to-from+1) > MaxSteps {
			return nil, bad(fmt.Sprintf("more than %d steps", MaxSteps))
		}
		for step := from; step <= to; step++ {
			if !seen[step] {
				seen[step] = true
				steps = append(steps, step)
			}
		}
	}
	slices.Sort(steps)
	return steps, nil
}

// parseStep parses one non-negative decimal step: digits only, no sign, no spaces inside.
func parseStep(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a step: %q", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// Select keeps the stages named in only (all when only is empty), in stage order; an unknown name is an
// error listing the valid ones.
func Select(stages []stage.Stage, only []string) ([]stage.Stage, error) {
	if len(only) == 0 {
		return stages, nil
	}
	want := map[stage.Name]bool{}
	for _, name := range only {
		found := false
		for _, s := range stages {
			if string(s.Name()) == strings.TrimSpace(name) {
				found = true
			}
		}
		if !found {
			names := make([]string, len(stages))
			for i, s := range stages {
				names[i] = string(s.Name())
			}
			return nil, fmt.Errorf("--only: unknown stage %q (one of %s)", name, strings.Join(names, ", "))
		}
		want[stage.Name(strings.TrimSpace(name))] = true
	}
	var out []stage.Stage
	for _, s := range stages {
		if want[s.Name()] {
			out = append(out, s)
		}
	}
	return out, nil
}

// Run runs the given steps (ascending, as ParseSteps returns them) of env's run, each due stage through stage.Execute with env.Resume set (a
// stage whose marker is committed is skipped; one that is not redoes the whole stage). It returns the
// report (also when it fails or is interrupted, with the work done until then) and an error wrapping the
// stage's error, or context.Canceled after an interrupt.
func Run(ctx context.Context, env *stage.Env, steps []int64, opts Options) (Report, error) {
	log := opts.Log
	if log == nil {
		log = env.Logger()
	}
	env = env.WithForce(false)
	env.Resume = true
	start := time.Now()
	rep := Report{}
	timings := map[stage.Name]*Timing{}
	for _, s := range opts.Stages {
		rep.Timings = append(rep.Timings, Timing{Stage: s.Name()})
	}
	for i := range rep.Timings {
		timings[rep.Timings[i].Stage] = &rep.Timings[i]
	}
	finish := func(err error) (Report, error) {
		rep.Wall = time.Since(start)
		if opts.Out != nil {
			PrintTable(opts.Out, rep)
		}
		return rep, err
	}
	term := env.Progress.Terminal()
	for i, step := range steps {
		ranAny := false
		var stepTime time.Duration
		for _, s := range opts.Stages {
			if !s.Due(env.Config, step) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return finish(fmt.Errorf("run: interrupted before %s of step %d: %w", s.Name(), step, err))
			}
			t := timings[s.Name()]
			log.Info("run: stage", "step", step, "stage", s.Name())
			out, err := executeStage(ctx, env, s, step, log)
			if out.Skipped {
				t.Skipped++
				if term {
					env.Progress.Printf("step %d  %-8s already committed", step, s.Name())
				}
				continue
			}
			t.Total += out.Elapsed
			stepTime += out.Elapsed
			t.Ran++
			ranAny = true
			if term {
				// On a terminal one line per stage and step (the log lines are for files and collectors).
				line := fmt.Sprintf("step %d  %-8s %7.2fs  ", step, s.Name(), out.Elapsed.Seconds())
				if err != nil {
					line += "FAILED (the error follows)"
				} else {
					line += out.Summary
				}
				env.Progress.Printf("%s", line)
			}
			if err != nil {
				if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
					err = fmt.Errorf("%w (%v)", ctx.Err(), err)
				}
				return finish(fmt.Errorf("run: step %d: %s: %w", step, s.Name(), err))
			}
		}
		if ranAny {
			rep.Steps++
		} else {
			rep.Resumed++
		}
		if opts.StepLines != nil || opts.AfterStep != nil {
			sum, err := Summarize(ctx, env.Lake, env.Run, env.Config, step)
			if err != nil {
				return finish(fmt.Errorf("run: step %d: reading its summary: %w", step, err))
			}
			sum.Elapsed = stepTime
			if opts.StepLines != nil {
				fmt.Fprintln(opts.StepLines, sum.Line())
			}
			if opts.AfterStep != nil {
				if err := opts.AfterStep(ctx, sum); err != nil {
					return finish(fmt.Errorf("run: after step %d: %w", step, err))
				}
			}
		}
		if term && i+1 < len(steps) {
			elapsed := time.Since(start)
			left := time.Duration(float64(elapsed) / float64(i+1) * float64(len(steps)-i-1))
			env.Progress.Printf("-- %d of %d steps done in %s, about %s left", i+1, len(steps), elapsed.Round(time.Second), left.Round(time.Second))
		}
	}
	return finish(nil)
}

// executeStage runs one stage, again (at most twice more) when it lost a partition commit to another
// writer. The runner is the step's only writer, so that writer is an earlier attempt killed between
// claiming a forced commit and writing its manifest, which the lake rolls forward on the next forced
// write of the partition (lake.ErrConcurrentWriter to that writer); the retry replaces it with the
// re-run's rows.
func executeStage(ctx context.Context, env *stage.Env, s stage.Stage, step int64, log *slog.Logger) (stage.Outcome, error) {
	var total time.Duration
	for attempt := 0; ; attempt++ {
		out, err := stage.Execute(ctx, env, s, step)
		total += out.Elapsed
		out.Elapsed = total
		if err == nil || attempt == 2 || ctx.Err() != nil || !errors.Is(err, lake.ErrConcurrentWriter) {
			return out, err
		}
		log.Warn("run: another writer committed the stage at this step first; running it again", "step", step, "stage", s.Name(), "error", err)
	}
}

// PrintTable writes the per-stage time table: runs, skips (already committed), total and mean seconds.
func PrintTable(w io.Writer, rep Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\truns\tskipped\ttotal s\tmean s\tshare\t")
	var sum time.Duration
	for _, t := range rep.Timings {
		sum += t.Total
	}
	for _, t := range rep.Timings {
		mean, share := 0.0, 0.0
		if t.Ran > 0 {
			mean = t.Total.Seconds() / float64(t.Ran)
		}
		if sum > 0 {
			share = 100 * float64(t.Total) / float64(sum)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.3f\t%.0f%%\t\n", t.Stage, t.Ran, t.Skipped, t.Total.Seconds(), mean, share)
	}
	fmt.Fprintf(tw, "all\t\t\t%.2f\t\t\t\n", sum.Seconds())
	tw.Flush()
	fmt.Fprintf(w, "steps run: %d, already complete: %d, wall %.2fs\n", rep.Steps, rep.Resumed, rep.Wall.Seconds())
}
