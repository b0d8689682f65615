package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/shard"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	register(&cli.Command{
		Name:  "run",
		Usage: "run whole steps: each step's stages in order, resuming from the last committed partition",
		Description: "For each step of --steps: sample, generate and gate at pool refresh steps (sample.refresh_every),\n" +
			"then rollout, regret and grpo. A stage whose output partition is committed is skipped, so after a crash,\n" +
			"Ctrl-C or reboot the same command resumes where the work stopped. Ctrl-C stops the stage in progress,\n" +
			"lets a write that has started finish, commits nothing partial and exits 130. A per-stage time table is\n" +
			"printed at the end.\n\n" +
			"--steps is " + steprun.StepsGrammar + "; steps run in ascending order,\n" +
			"each once. Anything else (1..3, 3x, 1,,2) is refused with exit 2.\n\n" +
			"Example: spade --run r1 run --steps 0-7\n" +
			"         spade --run r1 run --steps 0-399 --only regret,grpo   # re-score stored episodes",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "steps", Required: true, Usage: "steps to run: A, A-B (inclusive) or a comma-separated list, e.g. 0-3,8,10-11"},
			&cli.StringFlag{Name: "only", Usage: "comma-separated stages to run (default: every stage)"},
			&cli.StringFlag{Name: "trainer-dir", Usage: "keep the trainer's per-step files under DIR"},
		},
		Action: func(c *cli.Context) error {
			steps, err := steprun.ParseSteps(c.String("steps"))
			if err != nil {
				return asUsage(err)
			}
			lk, run, cfg, err := openRun(c)
			if err != nil {
				return err
			}
			stages := steprun.Stages()
			var only []string
			if s := c.String("only"); s != "" {
				only = strings.Split(s, ",")
			}
			if stages, err = steprun.Select(stages, only); err != nil {
				return asUsage(err)
			}
			env := &stage.Env{Lake: lk, Run: run, Config: cfg, Shard: shard.All, Log: slog.Default(), Progress: reporter,
				TrainerLog: os.Stderr, TrainerDir: c.String("trainer-dir")}
			defer env.Close()
			_, err = steprun.Run(c.Context, env, steps, steprun.Options{Stages: stages, Out: c.App.Writer, Log: slog.Default()})
			return err
		},
	})
}
