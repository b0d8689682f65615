package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/lake"
)

func newLakeUpgradeCommand() *cli.Command {
	return &cli.Command{
		Name:  "upgrade",
		Usage: "rename a lake written by an older spade (padded step=NNNNNN folders) to the current layout",
		Description: `Lakes written before layout 2 name steps step=000002 and fragments fragment=NAME; this renames
every such object (step=2, fragment-NAME) and records the layout in _lake.json. Contents are not
changed. Run it once with no other spade command using the lake; an interrupted upgrade loses nothing
and finishes when run again. A lake already current is left as it is.

Example: spade --lake s3://bucket/spade lake upgrade`,
		Action: func(c *cli.Context) error {
			return runLakeUpgrade(c.Context, globalsFrom(c))
		},
	}
}

// runLakeUpgrade carries the lake to the current layout (lake.Upgrade).
func runLakeUpgrade(ctx context.Context, opts globalOptions) error {
	uri := opts.LakeURI
	if err := lakeExists(uri); err != nil {
		return err
	}
	lk, err := lake.OpenForUpgrade(ctx, uri)
	if err != nil {
		return err
	}
	rep, err := lk.Upgrade(ctx)
	if err != nil {
		return fmt.Errorf("lake upgrade: %w (nothing is lost: run it again to finish)", err)
	}
	if rep.AlreadyCurrent {
		fmt.Fprintf(opts.Out, "%s is at layout %d already: nothing to do\n", uri, lake.Layout)
		return nil
	}
	fmt.Fprintf(opts.Out, "upgraded %s to layout %d: %d objects (%d bytes) renamed, %d partition manifests turned into commit records\n",
		uri, lake.Layout, rep.Moved, rep.Bytes, rep.Converted)
	return nil
}
