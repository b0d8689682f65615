// Package inputfile reads the user files that importers (corpus, bench, pool) turn into lake tables:
// JSONL and Parquet files of records, with one treatment of bad input.
//
// The contract:
//
//   - Every problem with an input is an *Error naming the file as the user named it and saying what is
//     wrong in one line ("FILE: PROBLEM"); a problem with one record starts with its location. The CLI
//     maps an *Error to exit code 2, and an importer that reads every file before it writes commits
//     nothing.
//   - Check (or Stat, for importers that also take directories) is called before a file is read:
//     "cannot read: ...", "is a directory; ...", "file is empty".
//   - Rows yields a file's records in order as decoded JSON objects (json.Decoder.UseNumber: numbers are
//     json.Number, so an id like 12345678 keeps its digits). A .jsonl or .ndjson file has one object a
//     line; blank lines are skipped but counted, and a record's location is "line N", N counting every
//     line of the file from 1. A .parquet file (read through DuckDB, each row as to_json gives it) has one
//     record a row, located "row N" from 1; a BLOB column's value is its bytes as a string (not DuckDB's
//     \xNN text), NULL is nil. A line that is not valid UTF-8 or not a JSON object is an Error; a
//     Parquet string is not checked for UTF-8 (the schemas' Validate does that with the column's name).
//   - Rows checks no field: the caller does, through Record's helpers, so its messages name the field.
package inputfile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spadekit/spade/internal/duck"
)

// Error is a problem with an input (a file that cannot be read, a wrong format, a missing column, a bad
// record) or with a flag: the file and what is wrong, in one line.
type Error struct {
	// File is the input as the user named it (or the flag at fault).
	File string
	// Problem says what is wrong, in one line.
	Problem string
}

// Error returns "FILE: PROBLEM".
func (e *Error) Error() string { return e.File + ": " + e.Problem }

// Stat returns the file's info, or an Error "cannot read: REASON".
func Stat(path string) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &Error{File: path, Problem: "cannot read: " + strings.TrimPrefix(err.Error(), "stat "+path+": ")}
	}
	return st, nil
}

// Check returns an Error unless path is a readable, non-empty file (not a directory).
func Check(path string) error {
	st, err := Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return &Error{File: path, Problem: "is a directory; name the .parquet or .jsonl files in it"}
	}
	if st.Size() == 0 {
		return &Error{File: path, Problem: "file is empty"}
	}
	return nil
}

// Supported reports whether Rows reads path: its extension is .jsonl, .ndjson or .parquet, in any case.
func Supported(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".parquet":
		return true
	}
	return false
}

// Record is one record of an input file.
type Record struct {
	// File is the input file as the user named it.
	File string
	// Where is the record's location in it: "line N" or "row N".
	Where string
	// N is that line's or row's number.
	N int
	// Fields is the record as a decoded JSON object (nil for a JSONL line of `null`).
	Fields map[string]any
}

// Fail returns an Error "FILE: WHERE: MESSAGE".
func (r Record) Fail(format string, args ...any) error {
	return &Error{File: r.File, Problem: r.Where + ": " + fmt.Sprintf(format, args...)}
}

// String returns the field name when it is a string, else an Error `WHERE: no string "NAME" field`.
func (r Record) String(name string) (string, error) {
	s, ok := r.Fields[name].(string)
	if !ok {
		return "", r.Fail("no string %q field", name)
	}
	return s, nil
}

// Text returns the field name when it is a string or a number (as its JSON text, digits kept); ok is false
// when it is absent, null or anything else.
func (r Record) Text(name string) (text string, ok bool) {
	switch v := r.Fields[name].(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

// Need names the columns an importer requires, checked against a Parquet file's schema before any row is
// read (a JSONL file has no schema: the caller checks each record's fields).
type Need struct {
	// Columns must all be in a Parquet file; the first missing one is an Error `no "COL" column (WANT)`.
	Columns []string
	// Want says what the importer reads, in that message: "want code, optional id, hint, skill".
	Want string
}

// Rows yields the records of the .jsonl/.ndjson or .parquet file at path (see the package comment), or
// one *Error and stops: an unsupported extension, a file that cannot be read, a missing column, a bad
// line. The caller calls Check first.
func Rows(ctx context.Context, path string, need Need) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		var err error
		switch strings.ToLower(filepath.Ext(path)) {
		case ".jsonl", ".ndjson":
			err = jsonLines(path, yield)
		case ".parquet":
			err = parquetRows(ctx, path, need, yield)
		default:
			err = &Error{File: path, Problem: fmt.Sprintf("unsupported format %q: want .parquet or .jsonl", filepath.Ext(path))}
		}
		if err != nil {
			yield(Record{}, err)
		}
	}
}

// decode parses one JSON object (UseNumber), or returns an Error located at "UNIT N".
func decode(path, unit string, n int, text []byte) (Record, error) {
	where := fmt.Sprintf("%s %d", unit, n)
	if !utf8.Valid(text) {
		return Record{}, &Error{File: path, Problem: where + ": not valid UTF-8"}
	}
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber() // ids like 12345678 stay "12345678", not "1.2345678e+07"
	if err := dec.Decode(&fields); err != nil {
		return Record{}, &Error{File: path, Problem: fmt.Sprintf("%s: not a JSON object: %v", where, err)}
	}
	return Record{File: path, Where: where, N: n, Fields: fields}, nil
}

func jsonLines(path string, yield func(Record, error) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return &Error{File: path, Problem: err.Error()}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		rec, err := decode(path, "line", line, text)
		if err != nil {
			return err
		}
		if !yield(rec, nil) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return &Error{File: path, Problem: err.Error()}
	}
	return nil
}

// parquetRows reads each row as DuckDB's to_json of it, with BLOB columns selected beside it as raw
// bytes.
func parquetRows(ctx context.Context, path string, need Need, yield func(Record, error) bool) error {
	db, err := duck.Open()
	if err != nil {
		return err
	}
	defer db.Close()
	src := "read_parquet('" + strings.ReplaceAll(path, "'", "''") + "')"
	desc, err := db.QueryContext(ctx, "select column_name, column_type from (describe select * from "+src+")")
	if err != nil {
		return &Error{File: path, Problem: "not a readable Parquet file: " + firstLine(err.Error())}
	}
	cols := map[string]bool{}
	var blobs []string
	for desc.Next() {
		var name, typ string
		if err := desc.Scan(&name, &typ); err != nil {
			desc.Close()
			return &Error{File: path, Problem: firstLine(err.Error())}
		}
		cols[name] = true
		if typ == "BLOB" {
			blobs = append(blobs, name)
		}
	}
	desc.Close()
	for _, c := range need.Columns {
		if !cols[c] {
			return &Error{File: path, Problem: fmt.Sprintf("no %q column (%s)", c, need.Want)}
		}
	}
	q := "select cast(to_json(spade_row) as varchar)"
	for _, b := range blobs {
		q += `, spade_row."` + strings.ReplaceAll(b, `"`, `""`) + `"`
	}
	rs, err := db.QueryContext(ctx, q+" from "+src+" spade_row")
	if err != nil {
		return &Error{File: path, Problem: firstLine(err.Error())}
	}
	defer rs.Close()
	raw := make([][]byte, len(blobs))
	dest := make([]any, 1+len(blobs))
	var obj string
	dest[0] = &obj
	for i := range raw {
		dest[1+i] = &raw[i]
	}
	for n := 1; rs.Next(); n++ {
		if err := rs.Scan(dest...); err != nil {
			return &Error{File: path, Problem: firstLine(err.Error())}
		}
		rec, err := decode(path, "row", n, []byte(obj))
		if err != nil {
			return err
		}
		for i, b := range blobs {
			if raw[i] == nil {
				rec.Fields[b] = nil
			} else {
				rec.Fields[b] = string(raw[i])
			}
		}
		if !yield(rec, nil) {
			return nil
		}
	}
	if err := rs.Err(); err != nil {
		return &Error{File: path, Problem: firstLine(err.Error())}
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// AppendNew returns existing followed by every row of incoming whose id is neither in existing nor on an
// earlier row of incoming, in incoming's order, with how many rows it appended and how many it passed
// over as duplicates: an importer's merge of new records into a table already committed. It appends to
// existing's backing array.
func AppendNew[R any](existing, incoming []R, id func(R) string) (merged []R, appended, skipped int) {
	seen := make(map[string]bool, len(existing)+len(incoming))
	for _, r := range existing {
		seen[id(r)] = true
	}
	merged = existing
	for _, r := range incoming {
		if seen[id(r)] {
			skipped++
			continue
		}
		seen[id(r)] = true
		merged = append(merged, r)
		appended++
	}
	return merged, appended, skipped
}
