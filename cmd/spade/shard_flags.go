package main

import (
	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/shard"
)

// stepFlags are the flags every stage command takes (DESIGN §4, §9): the step, the shard of the step
// this process runs (envs split by internal/shard's hash of env_id; the refresh stages sample, generate
// and gate split slots, since a slot's env_id changes with each attempt) and --force.
func stepFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Int64Flag{Name: "step", Required: true, Usage: "the training step"},
		&cli.IntFlag{Name: "shard", Value: 0, EnvVars: []string{"SPADE_SHARD"}, Usage: "this process's shard, 0..shards-1 (envs split by a hash of env_id; sample, generate and gate split slots: slot mod shards)"},
		&cli.IntFlag{Name: "shards", Value: 1, EnvVars: []string{"SPADE_SHARDS"}, Usage: "number of processes running this step of the stage; the partition commits when all are in"},
		&cli.BoolFlag{Name: "force", Usage: "replace committed partitions (unsharded only)"},
	}
}

// shardSpec reads --shard and --shards; an invalid pair is a usage error.
func shardSpec(c *cli.Context) (shard.Spec, error) {
	s, err := shard.New(c.Int("shard"), c.Int("shards"))
	if err != nil {
		return s, asUsage(err)
	}
	if s.Sharded() && c.Bool("force") {
		return s, usageError("--force replaces a whole partition and needs --shards 1")
	}
	return s, nil
}

// stepArg reads --step; a negative step is a usage error.
func stepArg(c *cli.Context) (int64, error) {
	step := c.Int64("step")
	if step < 0 {
		return 0, usageError("--step must be >= 0, got %d", step)
	}
	return step, nil
}

// stageArgs parses what every stage command needs before it calls its stage: --step, the shard pair and
// the run (whose run.json must exist). Each failure is already mapped to its exit code.
func stageArgs(c *cli.Context) (step int64, spec shard.Spec, lk *lake.Lake, run string, err error) {
	if step, err = stepArg(c); err != nil {
		return
	}
	if spec, err = shardSpec(c); err != nil {
		return
	}
	lk, run, _, err = openRun(c)
	return
}
