package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/tensorboard"
)

// newExportCommand is `spade export`: a run's figures in the formats of other tools.
func newExportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write a run's figures for other tools (TensorBoard, and W&B through it)",
		Subcommands: []*cli.Command{
			newExportTensorBoardCommand(),
		},
	}
}

// exportTensorBoardOptions are the options of `spade export tensorboard`.
type exportTensorBoardOptions struct {
	globalOptions
	// Dir is the log directory the event file is written into.
	Dir string
}

func newExportTensorBoardCommand() *cli.Command {
	return &cli.Command{
		Name:      "tensorboard",
		Usage:     "write every per-step figure of the report and train_metrics as a TensorBoard event file",
		ArgsUsage: "DIR",
		Description: "Writes DIR/<run>/events.out.tfevents.* with one scalar per figure and step: agent/ (solve rate and\n" +
			"mean return, unhinted and hinted), curriculum/ (band share, regret, Vendi/n), designer/reward, gate/,\n" +
			"cost/, eval/<bench>/avg_at_k and train/<role>/<column> for every train_metrics column. Then\n" +
			"`tensorboard --logdir DIR` shows them and `wandb sync --sync-tensorboard DIR` uploads them.\n" +
			"`spade run --tensorboard DIR` writes the same figures as the steps commit.\n\n" +
			"Example: spade --run r1 export tensorboard ./tb",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("export tensorboard takes one DIR, got %d arguments", c.NArg())
			}
			return runExportTensorBoard(c.Context, exportTensorBoardOptions{globalOptions: globalsFrom(c), Dir: c.Args().First()})
		},
	}
}

// runExportTensorBoard writes the run's figures to a new event file under opts.Dir/<run>.
func runExportTensorBoard(ctx context.Context, opts exportTensorBoardOptions) error {
	lk, run, _, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(opts.Dir); err == nil && !fi.IsDir() {
		return usageError("export tensorboard: %s is a file; name a directory", opts.Dir)
	}
	s, err := openTensorBoardSession(ctx, lk, run)
	if err != nil {
		return err
	}
	defer s.Close()
	figures, err := tensorboard.Figures(ctx, s)
	if err != nil {
		return err
	}
	w, err := tensorboard.Create(tensorBoardRunDir(opts.Dir, run), "spade")
	if err != nil {
		return asUsage(err)
	}
	if err := w.Write(figures, time.Now()); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	tags := map[string]bool{}
	for _, f := range figures {
		tags[f.Tag] = true
	}
	fmt.Fprintf(opts.Out, "wrote %d values of %d tags to %s\nview: tensorboard --logdir %s   upload: wandb sync --sync-tensorboard %s\n",
		len(figures), len(tags), w.Path(), opts.Dir, opts.Dir)
	return nil
}

// openTensorBoardSession opens the analytics session the figures are read from: the run's models over
// its committed tables, with the embeddings already in the lake (nothing is computed or written).
func openTensorBoardSession(ctx context.Context, lk *lake.Lake, run string) (*analytics.Session, error) {
	return analytics.OpenCached(ctx, lk, run, "")
}

// tensorBoardRunDir is the run's folder of a TensorBoard log directory: TensorBoard shows each folder as
// one run, so several spade runs exported to one DIR compare side by side.
func tensorBoardRunDir(dir, run string) string { return filepath.Join(dir, run) }
