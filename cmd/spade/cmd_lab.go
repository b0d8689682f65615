package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/lab"
	steprun "github.com/spadekit/spade/stages/run"
)

// labOptions are the options of `spade lab`.
type labOptions struct {
	globalOptions
	// Seed is --seed: the lab run's seed.
	Seed int64
	// Steps is --steps, in steprun.StepsGrammar.
	Steps string
	// WorkDir is --work-dir: the model, checkpoints and server files ("" is ./lab/<run>).
	WorkDir string
	// WarmSteps is --warm-steps: the policy's supervised warm start when it is first made.
	WarmSteps int
	// Ablation is --ablation: one of lab.AblationNames ("" for the full method).
	Ablation string
	// Sets is --set KEY=VALUE, repeated: settings applied after the lab's.
	Sets []string
}

func newLabCommand() *cli.Command {
	return &cli.Command{
		Name:  "lab",
		Usage: "run the whole loop on a CPU: a tiny policy served as SGLang serves, trained and published every step",
		Description: "Makes a tiny decoder (the trainer's, initialised from --seed, warm-started so its answers have the\n" +
			"lab world's form), serves it with SGLang's protocol, creates the run from the " + lab.BasePreset + " preset with\n" +
			"the lab's CPU sizes (docs/configuration.md, \"The lab\") and runs --steps with grpo.trainer torch and\n" +
			"grpo.publish sglang: every step's update is loaded into the server before the next step samples.\n" +
			"After each step one line says what it did (as `spade run`) and one line its instruments (table\n" +
			"lab_steps): the Agent's IS weight (1 when the server's and the trainer's log-probs agree), the calls\n" +
			"served with another version than the previous step's publication, and the checksums of the weights\n" +
			"the trainer saved and the server loaded. The same command again resumes.\n\n" +
			"--ablation NAME runs the same world under one of the paper's ablations; compare the runs with\n" +
			"`spade --run lab1 --run lab1-frozen ablate`.\n\n" +
			"Example: spade --run lab1 lab --steps 0-99\n" +
			"         spade --run lab1-frozen lab --ablation frozen-designer --steps 0-99\n" +
			"         spade --run lab2 lab --seed 7 --steps 0-19",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "seed", Value: 0, Usage: "the run's seed (the policy's initialisation and every sample)"},
			&cli.StringFlag{Name: "steps", Value: "0-19", Usage: "steps to run: A, A-B (inclusive) or a comma-separated list"},
			&cli.StringFlag{Name: "work-dir", Usage: "where the model, checkpoints and server files go (default ./lab/<run>)"},
			&cli.IntFlag{Name: "warm-steps", Value: 300, Usage: "supervised warm-start steps when the model is first made"},
			&cli.StringSliceFlag{Name: "set", Usage: "`KEY=VALUE` applied after the lab's settings (repeatable), e.g. grpo.lr=0.003"},
			&cli.StringFlag{Name: "ablation", Usage: "run one of the paper's ablations: " + strings.Join(lab.AblationNames(), ", ")},
		},
		Action: func(c *cli.Context) error {
			return runLab(c.Context, labOptions{globalOptions: globalsFrom(c), Seed: c.Int64("seed"), Steps: c.String("steps"),
				WorkDir: c.String("work-dir"), WarmSteps: c.Int("warm-steps"), Ablation: c.String("ablation"), Sets: c.StringSlice("set")})
		},
	}
}

func runLab(ctx context.Context, opts labOptions) error {
	steps, err := steprun.ParseSteps(opts.Steps)
	if err != nil {
		return asUsage(err)
	}
	if opts.Ablation != "" {
		if err := checkChoice("--ablation", opts.Ablation, lab.AblationNames()...); err != nil {
			return err
		}
	}
	if opts.WarmSteps < 0 {
		return usageError("--warm-steps must be >= 0, got %d", opts.WarmSteps)
	}
	run, err := opts.runName()
	if err != nil {
		return err
	}
	lk, err := opts.openLake(ctx)
	if err != nil {
		return err
	}
	work := opts.WorkDir
	if work == "" {
		work = filepath.Join("lab", run)
	}
	started := time.Now()
	rows, err := lab.Run(ctx, lab.Options{Lake: lk, Run: run, Seed: opts.Seed, Steps: steps, WorkDir: work,
		WarmSteps: opts.WarmSteps, Ablation: opts.Ablation, Sets: opts.Sets, Out: opts.Out, Log: slog.Default(), Progress: opts.Progress, TrainerLog: os.Stderr})
	if err != nil {
		return err
	}
	worst := 0.0
	for _, r := range rows {
		if !math.IsNaN(r.AgentISWeight) {
			worst = math.Max(worst, math.Abs(r.AgentISWeight-1))
		}
	}
	fmt.Fprintf(opts.Out, "\n%d steps in %s; largest |Agent IS weight - 1| %.2g\n", len(rows), time.Since(started).Round(time.Second), worst)
	fmt.Fprintf(opts.Out, "next: spade --lake %s --run %s query \"select * from lab_steps order by step\"\n", opts.LakeURI, run)
	fmt.Fprintf(opts.Out, "      spade --lake %s --run %s report\n", opts.LakeURI, run)
	fmt.Fprintf(opts.Out, "      spade --lake %s --run %s view\n", opts.LakeURI, run)
	return nil
}
