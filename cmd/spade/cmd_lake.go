package main

import (
	"time"

	"github.com/urfave/cli/v2"
)

// newLakeCommand is `spade lake`: each subcommand lives in its own cmd_lake_<name>.go.
func newLakeCommand() *cli.Command {
	return &cli.Command{
		Name:  "lake",
		Usage: "inspect the lake",
		Subcommands: []*cli.Command{
			newLakeLsCommand(),
			newLakeVerifyCommand(),
			newLakeVacuumCommand(),
			newLakeUpgradeCommand(),
			newLakeExportCommand(),
		},
	}
}

// durationFlag is a duration flag with a default written as Go writes durations ("1h").
func durationFlag(name, value, usage string) cli.Flag {
	d, err := time.ParseDuration(value)
	if err != nil {
		panic(err)
	}
	return &cli.DurationFlag{Name: name, Value: d, Usage: usage}
}
