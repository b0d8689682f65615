// Package corpus imports documents (Parquet or JSONL files with `id` and `text` columns, optional
// `source` and `domain`: the layout of Hugging Face dataset exports) into a lake's corpus table.
// Every input is read and checked before anything is committed, so a bad file commits nothing.
package corpus

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// InputError is a problem with an input file: the file and what is wrong with it. The CLI maps it to
// exit code 2.
type InputError struct {
	// File is the input file as the user named it (or the flag at fault).
	File string
	// Problem says what is wrong, in one line.
	Problem string
}

// Error returns "FILE: PROBLEM".
func (e *InputError) Error() string { return e.File + ": " + e.Problem }

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
	seen := make(map[string]bool, len(existing)+len(incoming))
	for _, r := range existing {
		seen[r.DocID] = true
	}
	res := Result{}
	merged := existing
	for _, r := range incoming {
		if seen[r.DocID] {
			res.Skipped++
			continue
		}
		seen[r.DocID] = true
		merged = append(merged, r)
		res.Imported++
	}
	res.Total = len(merged)
	if res.Imported == 0 && len(existing) > 0 {
		return res, nil
	}
	_, err = lake.WriteRows(ctx, lk, key, merged, lake.WriteOptions{Force: len(existing) > 0})
	return res, err
}

func readFile(ctx context.Context, path string) ([]schemas.CorpusRow, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &InputError{File: path, Problem: "cannot read: " + strings.TrimPrefix(err.Error(), "stat "+path+": ")}
	}
	if st.IsDir() {
		return nil, &InputError{File: path, Problem: "is a directory; name the .parquet or .jsonl files in it"}
	}
	if st.Size() == 0 {
		return nil, &InputError{File: path, Problem: "file is empty"}
	}
	var rows []schemas.CorpusRow
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet":
		rows, err = readParquet(ctx, path)
	case ".jsonl", ".ndjson":
		rows, err = readJSONL(path)
	default:
		return nil, &InputError{File: path, Problem: fmt.Sprintf("unsupported format %q: want .parquet or .jsonl with id and text columns", filepath.Ext(path))}
	}
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &InputError{File: path, Problem: "no documents in file"}
	}
	return rows, nil
}

func checkRow(path string, where string, r schemas.CorpusRow) error {
	if err := r.Validate(); err != nil {
		return &InputError{File: path, Problem: where + ": " + err.Error()}
	}
	return nil
}

func readJSONL(path string) ([]schemas.CorpusRow, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{File: path, Problem: err.Error()}
	}
	var rows []schemas.CorpusRow
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if !utf8.Valid(text) {
			return nil, &InputError{File: path, Problem: fmt.Sprintf("line %d: not valid UTF-8", line)}
		}
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber() // ids like 12345678 stay "12345678", not "1.2345678e+07"
		if err := dec.Decode(&doc); err != nil {
			return nil, &InputError{File: path, Problem: fmt.Sprintf("line %d: not a JSON object: %v", line, err)}
		}
		var id string
		switch v := doc["id"].(type) {
		case string:
			id = v
		case json.Number:
			id = v.String()
		default:
			return nil, &InputError{File: path, Problem: fmt.Sprintf("line %d: no string or number \"id\" field", line)}
		}
		txt, ok := doc["text"].(string)
		if !ok {
			return nil, &InputError{File: path, Problem: fmt.Sprintf("line %d: no string \"text\" field", line)}
		}
		r := schemas.CorpusRow{DocID: id, Text: txt}
		r.Source, _ = doc["source"].(string)
		r.Domain, _ = doc["domain"].(string)
		if err := checkRow(path, fmt.Sprintf("line %d", line), r); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, &InputError{File: path, Problem: err.Error()}
	}
	return rows, nil
}

func readParquet(ctx context.Context, path string) ([]schemas.CorpusRow, error) {
	db, err := duck.Open()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	src := "read_parquet('" + strings.ReplaceAll(path, "'", "''") + "')"
	cols := map[string]bool{}
	desc, err := db.QueryContext(ctx, "select column_name from (describe select * from "+src+")")
	if err != nil {
		return nil, &InputError{File: path, Problem: "not a readable Parquet file: " + firstLine(err.Error())}
	}
	for desc.Next() {
		var c string
		desc.Scan(&c)
		cols[c] = true
	}
	desc.Close()
	for _, need := range []string{"id", "text"} {
		if !cols[need] {
			return nil, &InputError{File: path, Problem: fmt.Sprintf("no %q column (want id and text, optional source and domain)", need)}
		}
	}
	opt := func(c string) string {
		if cols[c] {
			return "coalesce(cast(" + c + " as blob), ''::blob)"
		}
		return "''::blob"
	}
	q := fmt.Sprintf("select cast(cast(id as varchar) as blob), cast(text as blob), %s, %s from %s", opt("source"), opt("domain"), src)
	rs, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, &InputError{File: path, Problem: firstLine(err.Error())}
	}
	defer rs.Close()
	var rows []schemas.CorpusRow
	for n := 1; rs.Next(); n++ {
		var id, text, source, domain sql.RawBytes
		if err := rs.Scan(&id, &text, &source, &domain); err != nil {
			return nil, &InputError{File: path, Problem: firstLine(err.Error())}
		}
		r := schemas.CorpusRow{DocID: string(id), Text: string(text), Source: string(source), Domain: string(domain)}
		if err := checkRow(path, fmt.Sprintf("row %d", n), r); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	if err := rs.Err(); err != nil {
		return nil, &InputError{File: path, Problem: firstLine(err.Error())}
	}
	return rows, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
