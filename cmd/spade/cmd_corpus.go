package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/corpus"
	"github.com/spadekit/spade/internal/lake"
)

func init() {
	register(&cli.Command{
		Name:  "corpus",
		Usage: "manage the document corpora the Designer draws from",
		Subcommands: []*cli.Command{{
			Name:      "import",
			Usage:     "import Parquet or JSONL documents (id, text; optional source, domain) into a corpus",
			ArgsUsage: "FILE...",
			Description: "Reads every file first and commits nothing unless all are valid. Documents are deduplicated by id,\n" +
				"within the input and against the corpus already in the lake.\n\n" +
				"Example: spade corpus import --name default testdata/corpus/corpus.parquet",
			Flags: []cli.Flag{&cli.StringFlag{Name: "name", Value: "default", Usage: "corpus name (runs refer to it as sample.corpus)"}},
			Action: func(c *cli.Context) error {
				lk, err := openLake(c)
				if err != nil {
					return err
				}
				res, err := corpus.Import(c.Context, lk, c.String("name"), c.Args().Slice())
				var inputErr *corpus.InputError
				if errors.As(err, &inputErr) {
					return asUsage(fmt.Errorf("corpus import: %w; nothing was imported", err))
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "corpus %s: %d imported, %d skipped as duplicates, %d documents in total\n",
					c.String("name"), res.Imported, res.Skipped, res.Total)
				return nil
			},
		}},
	})
}

func corpusKey(name string) lake.PartitionKey { return lake.CorpusKey(name) }
