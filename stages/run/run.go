package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
)

// StageName names a stage of a step.
type StageName string

// The stages of a step, in the order they run (DESIGN §4).
const (
	Sample   StageName = "sample"
	Generate StageName = "generate"
	Gate     StageName = "gate"
	Rollout  StageName = "rollout"
	Regret   StageName = "regret"
	GRPO     StageName = "grpo"
)

// Order is the stage order of a step.
var Order = []StageName{Sample, Generate, Gate, Rollout, Regret, GRPO}

// Stage is one stage as the runner drives it.
type Stage struct {
	// Name is the stage's name.
	Name StageName
	// Refresh is true for stages that run only at pool refresh steps.
	Refresh bool
	// Marker is the table whose partition at the step the stage commits last: once it is committed the
	// stage is done at that step.
	Marker string
	// Run runs the stage at a step. The runner calls it only while Marker is not committed, and Run redoes
	// the whole stage then: partitions that an interrupted attempt committed before the marker are
	// replaced, not kept (see Stages).
	Run func(ctx context.Context, step int64) error
}

// Options configure a run of steps.
type Options struct {
	// Stages are the stages to run, in order (see Stages for the real ones).
	Stages []Stage
	// Out receives the per-stage time table (nil: none).
	Out io.Writer
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

// Timing is one stage's line of the time table.
type Timing struct {
	Stage StageName
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

// ParseSteps parses "A-B" (inclusive) or a single step "A".
func ParseSteps(s string) (from, to int64, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	if _, err := fmt.Sscan(a, &from); err != nil {
		return 0, 0, fmt.Errorf("--steps %q: want A-B or A, with A <= B non-negative integers", s)
	}
	to = from
	if isRange {
		if _, err := fmt.Sscan(b, &to); err != nil {
			return 0, 0, fmt.Errorf("--steps %q: want A-B or A, with A <= B non-negative integers", s)
		}
	}
	if from < 0 || to < from {
		return 0, 0, fmt.Errorf("--steps %q: want A-B or A, with A <= B non-negative integers", s)
	}
	return from, to, nil
}

// Select keeps the stages named in only (all when only is empty), in stage order; an unknown name is an
// error listing the valid ones.
func Select(stages []Stage, only []string) ([]Stage, error) {
	if len(only) == 0 {
		return stages, nil
	}
	want := map[StageName]bool{}
	for _, name := range only {
		found := false
		for _, s := range stages {
			if string(s.Name) == strings.TrimSpace(name) {
				found = true
			}
		}
		if !found {
			names := make([]string, len(stages))
			for i, s := range stages {
				names[i] = string(s.Name)
			}
			return nil, fmt.Errorf("--only: unknown stage %q (one of %s)", name, strings.Join(names, ", "))
		}
		want[StageName(strings.TrimSpace(name))] = true
	}
	var out []Stage
	for _, s := range stages {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// Due reports whether a stage runs at step under cfg's refresh schedule.
func Due(s Stage, step int64, cfg *config.Config) bool {
	return !s.Refresh || step%int64(max(cfg.Sample.RefreshEvery, 1)) == 0
}

// Run runs steps from..to of run. It returns the report (also when it fails or is interrupted, with the
// work done until then) and an error wrapping the stage's error, or context.Canceled after an interrupt.
func Run(ctx context.Context, lk *lake.Lake, run string, from, to int64, opts Options) (Report, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	start := time.Now()
	rep := Report{}
	timings := map[StageName]*Timing{}
	for _, s := range opts.Stages {
		rep.Timings = append(rep.Timings, Timing{Stage: s.Name})
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
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		return finish(err)
	}
	for step := from; step <= to; step++ {
		ranAny := false
		for _, s := range opts.Stages {
			if !Due(s, step, cfg) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return finish(fmt.Errorf("run: interrupted before %s of step %d: %w", s.Name, step, err))
			}
			done, err := lk.Committed(ctx, lake.PartitionKey{Run: run, Table: s.Marker, Step: step})
			if err != nil {
				return finish(fmt.Errorf("run: step %d: %s: %w", step, s.Name, err))
			}
			t := timings[s.Name]
			if done {
				t.Skipped++
				continue
			}
			log.Info("run: stage", "step", step, "stage", s.Name)
			began := time.Now()
			err = runStage(ctx, s, step, log)
			t.Total += time.Since(began)
			t.Ran++
			ranAny = true
			if err != nil {
				if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
					err = fmt.Errorf("%w (%v)", ctx.Err(), err)
				}
				return finish(fmt.Errorf("run: step %d: %s: %w", step, s.Name, err))
			}
		}
		if ranAny {
			rep.Steps++
		} else {
			rep.Resumed++
		}
	}
	return finish(nil)
}

// runStage runs one stage, again (at most twice more) when it lost a partition commit to another writer.
// The runner is the step's only writer, so that writer is an earlier attempt killed between claiming a
// forced commit and writing its manifest, which the lake rolls forward on the next forced write of the
// partition (lake.ErrConcurrentWriter to that writer); the retry replaces it with the re-run's rows.
func runStage(ctx context.Context, s Stage, step int64, log *slog.Logger) error {
	for attempt := 0; ; attempt++ {
		err := s.Run(ctx, step)
		if err == nil || attempt == 2 || ctx.Err() != nil || !errors.Is(err, lake.ErrConcurrentWriter) {
			return err
		}
		log.Warn("run: a killed attempt's commit was rolled forward; running the stage again", "step", step, "stage", s.Name, "error", err)
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
