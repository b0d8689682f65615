package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/stages/stage"
)

// stageCommand is what one stage command adds to the shared builder: its description and extra flags,
// and how it makes its stage from the parsed flags (stageFor may adjust env, e.g. --weights).
type stageCommand struct {
	name        stage.Name
	usage       string
	description string
	flags       []cli.Flag
	stageFor    func(c *cli.Context, env *stage.Env) (stage.Stage, error)
}

// register builds the stage's command: --step, --shard/--shards (envs split by internal/shard's hash of
// env_id; the refresh stages sample, generate and gate split slots, since a slot's env_id changes with
// each attempt), --force and the stage's own flags; its action builds the Env once and runs the stage
// through stage.Execute, printing one closing line.
func (sc stageCommand) register() { register(sc.command()) }

// command builds the stage's command without registering it (a stage command under a command group,
// such as `spade pool draw`, is registered by its group).
func (sc stageCommand) command() *cli.Command {
	flags := append([]cli.Flag{
		&cli.Int64Flag{Name: "step", Required: true, Usage: "the training step"},
		&cli.IntFlag{Name: "shard", Value: 0, EnvVars: []string{"SPADE_SHARD"}, Usage: "this process's shard, 0..shards-1 (envs split by a hash of env_id; sample, generate and gate split slots: slot mod shards)"},
		&cli.IntFlag{Name: "shards", Value: 1, EnvVars: []string{"SPADE_SHARDS"}, Usage: "number of processes running this step of the stage; the partition commits when all are in"},
		&cli.BoolFlag{Name: "force", Usage: "replace committed partitions (unsharded only)"},
	}, sc.flags...)
	return &cli.Command{Name: string(sc.name), Usage: sc.usage, Description: sc.description, Flags: flags, Action: sc.action}
}

// action runs the stage at --step for this process's shard.
func (sc stageCommand) action(c *cli.Context) error {
	step := c.Int64("step")
	lk, run, cfg, err := openRun(c)
	if err != nil {
		return err
	}
	env := &stage.Env{Lake: lk, Run: run, Config: cfg, Force: c.Bool("force"),
		Shard: shard.Spec{Index: c.Int("shard"), Count: c.Int("shards")},
		Log:   slog.Default(), Progress: reporter, TrainerLog: os.Stderr}
	defer env.Close()
	s, err := sc.stageFor(c, env)
	if err != nil {
		return err
	}
	out, err := stage.Execute(c.Context, env, s, step)
	if errors.Is(err, stage.ErrInvalid) || errors.Is(err, stage.ErrNotDue) {
		return asUsage(err)
	}
	if err != nil {
		return err
	}
	if out.Skipped {
		fmt.Fprintf(c.App.Writer, "%s: step %d already committed (use --force to redo it)\n", sc.name, step)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "%s: step %d: %s\n", sc.name, step, out.Summary)
	return nil
}
