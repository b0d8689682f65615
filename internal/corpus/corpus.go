// Package corpus imports documents (Parquet or JSONL files with `id` and `text` columns, optional
// `source` and `domain`: the layout of Hugging Face dataset exports) into a lake's corpus table.
// Every input is read and checked before anything is committed, so a bad file commits nothing.
package corpus

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spadekit/spade/internal/inputfile"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// InputError is a problem with an input file: the file and what is wrong with it. The CLI maps it to
// exit code 2.
type InputError = inputfile.Error

// Result reports an import.
type Result struct {
	// Imported counts new documents committed; Skipped counts duplicates (by id) of the input or of the
	// corpus already in the lake.
	Imported, Skipped int
	// Total is the corpus size after the import.
	Total int
}

// Import reads files and merges their documents into the corpus `name`, deduplicating by id. Nothing is
// committed unless every file is valid.
func Import(ctx context.Context, lk *lake.Lake, name string, files []string) (Result, error) {
	if err := lake.ValidName(name); err != nil {
		return Result{}, &InputError{File: "--name", Problem: err.Error()}
	}
	if len(files) == 0 {
		return Result{}, &InputError{File: "(no files)", Problem: "name at least one .parquet or .jsonl file"}
	}
	var incoming []schemas.CorpusRow
	for _, f := range files {
		rows, err := readFile(ctx, f)
		if err != nil {
			return Result{}, err
		}
		incoming = append(incoming, rows...)
	}
	key := lake.CorpusKey(name)
	existing, err := lake.ReadRows[schemas.CorpusRow](ctx, lk, key)
	if err != nil && !errors.Is(err, lake.ErrNotCommitted) {
		return Result{}, err
	}
	merged, imported, skipped := inputfile.AppendNew(existing, incoming, func(r schemas.CorpusRow) string { return r.DocID })
	res := Result{Imported: imported, Skipped: skipped, Total: len(merged)}
	if res.Imported == 0 && len(existing) > 0 {
		return res, nil
	}
	spec := lake.TxnSpec{Corpus: name, Stage: "corpus-import", Force: len(existing) > 0}
	_, err = lake.CommitRows(ctx, lk, spec, key, merged, lake.WriteOptions{})
	return res, err
}

func readFile(ctx context.Context, path string) ([]schemas.CorpusRow, error) {
	if err := inputfile.Check(path); err != nil {
		return nil, err
	}
	if !inputfile.Supported(path) {
		return nil, &InputError{File: path, Problem: fmt.Sprintf("unsupported format %q: want .parquet or .jsonl with id and text columns", filepath.Ext(path))}
	}
	var rows []schemas.CorpusRow
	need := inputfile.Need{Columns: []string{"id", "text"}, Want: "want id and text, optional source and domain"}
	for rec, err := range inputfile.Rows(ctx, path, need) {
		if err != nil {
			return nil, err
		}
		id, ok := rec.Text("id")
		if !ok {
			return nil, rec.Fail("no string or number \"id\" field")
		}
		txt, err := rec.String("text")
		if err != nil {
			return nil, err
		}
		r := schemas.CorpusRow{DocID: id, Text: txt}
		r.Source, _ = rec.Fields["source"].(string)
		r.Domain, _ = rec.Fields["domain"].(string)
		if err := r.Validate(); err != nil {
			return nil, rec.Fail("%v", err)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, &InputError{File: path, Problem: "no documents in file"}
	}
	return rows, nil
}
