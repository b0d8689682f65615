package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/corpus"
)

func newCorpusCommand() *cli.Command {
	return &cli.Command{
		Name:        "corpus",
		Usage:       "manage the document corpora the Designer draws from",
		Subcommands: []*cli.Command{newCorpusImportCommand()},
	}
}

// corpusImportOptions are the options of `spade corpus import`.
type corpusImportOptions struct {
	globalOptions
	// Name is --name, the corpus's name (sample.corpus refers to it).
	Name string
}

func newCorpusImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import Parquet or JSONL documents (id, text; optional source, domain) into a corpus",
		ArgsUsage: "FILE...",
		Description: `Reads every file first and commits nothing unless all are valid. Documents are deduplicated by id,
within the input and against the corpus already in the lake.

Example: spade corpus import --name default testdata/corpus/corpus.parquet`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "name", Value: "default", Usage: "corpus name (runs refer to it as sample.corpus)"}},
		Action: func(c *cli.Context) error {
			return runCorpusImport(c.Context, corpusImportOptions{globalOptions: globalsFrom(c), Name: c.String("name")}, c.Args().Slice())
		},
	}
}

// runCorpusImport imports the documents of the files args into the corpus opts.Name; nothing is
// imported unless every file is valid.
func runCorpusImport(ctx context.Context, opts corpusImportOptions, args []string) error {
	lk, err := opts.openLake(ctx)
	if err != nil {
		return err
	}
	res, err := corpus.Import(ctx, lk, opts.Name, args)
	var inputErr *corpus.InputError
	if errors.As(err, &inputErr) {
		return asUsage(fmt.Errorf("corpus import: %w; nothing was imported", err))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "corpus %s: %d imported, %d skipped as duplicates, %d documents in total\n",
		opts.Name, res.Imported, res.Skipped, res.Total)
	return nil
}
