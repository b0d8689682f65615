package inputfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/inputfile"
)

// write makes the file name in dir holding body and returns its path.
func write(t *testing.T, dir, name, body string) (path string) {
	t.Helper()
	path = filepath.Join(dir, name)
	if os.WriteFile(path, []byte(body), 0o644) != nil {
		t.Fatal("cannot write", path)
	}
	return path
}

// read collects a file's records, stopping at the first error.
func read(path string, need inputfile.Need) ([]inputfile.Record, error) {
	var recs []inputfile.Record
	for r, err := range inputfile.Rows(context.Background(), path, need) {
		if err != nil {
			return recs, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// wantError checks err is one *inputfile.Error for file whose problem says want, on one line.
func wantError(t *testing.T, err error, file, want string) {
	t.Helper()
	var ie *inputfile.Error
	if !errors.As(err, &ie) || ie.File != file || !strings.Contains(ie.Problem, want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want an inputfile.Error for %s saying %q", err, file, want)
	}
	if err.Error() != file+": "+ie.Problem {
		t.Fatalf("Error() = %q, want FILE: PROBLEM", err.Error())
	}
}

func TestJSONLLinesCountBlanksAndKeepDigits(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "a.JSONL", `{"id": 30000000001, "text": "x"}`+"\n\n  \n"+`{"id": "b", "n": null}`+"\n")
	recs, err := read(p, inputfile.Need{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Where != "line 1" || recs[1].Where != "line 4" || recs[1].N != 4 || recs[1].File != p {
		t.Fatalf("records %+v", recs)
	}
	if id, ok := recs[0].Text("id"); !ok || id != "30000000001" {
		t.Fatalf("id %q %v", id, ok)
	}
	if _, err := recs[1].String("text"); err == nil || err.Error() != p+`: line 4: no string "text" field` {
		t.Fatalf("missing field: %v", err)
	}
	if _, ok := recs[1].Text("n"); ok {
		t.Fatal("a null field read as text")
	}
}

func TestBadLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"notjson.jsonl", `{"id": 1}` + "\n{oops\n", "line 2: not a JSON object"},
		{"array.ndjson", "[1, 2]\n", "line 1: not a JSON object"},
		{"utf8.jsonl", "\n{\"text\": \"h\xffi\"}\n", "line 2: not valid UTF-8"},
	} {
		p := write(t, dir, tc.name, tc.body)
		_, err := read(p, inputfile.Need{})
		wantError(t, err, p, tc.want)
	}
}

func TestParquetRows(t *testing.T) {
	dir := t.TempDir()
	db, err := duck.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := filepath.Join(dir, "it's.parquet")
	q := `select * from (values (12345678901, 'one', from_hex('c3a9'), [1, 2]), (2, null, null, []))
		v(id, text, "odd ""name""", list)`
	if _, err := db.Exec("copy (" + q + ") to '" + strings.ReplaceAll(p, "'", "''") + "' (format parquet)"); err != nil {
		t.Fatal(err)
	}
	recs, err := read(p, inputfile.Need{Columns: []string{"id", "text"}, Want: "want id and text"})
	if err != nil {
		t.Fatal(err)
	}
	want := []inputfile.Record{
		{File: p, Where: "row 1", N: 1, Fields: map[string]any{"id": json.Number("12345678901"), "text": "one", `odd "name"`: "é", "list": []any{json.Number("1"), json.Number("2")}}},
		{File: p, Where: "row 2", N: 2, Fields: map[string]any{"id": json.Number("2"), "text": nil, `odd "name"`: nil, "list": []any{}}},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("records\n%#v\nwant\n%#v", recs, want)
	}
	_, err = read(p, inputfile.Need{Columns: []string{"id", "code"}, Want: "want code, optional id"})
	wantError(t, err, p, `no "code" column (want code, optional id)`)
	bad := write(t, dir, "garbage.parquet", "this is not parquet")
	_, err = read(bad, inputfile.Need{})
	wantError(t, err, bad, "not a readable Parquet file: ")
}

func TestUnknownExtensionAndChecks(t *testing.T) {
	dir := t.TempDir()
	csv := write(t, dir, "docs.csv", "id,text\n1,x\n")
	if inputfile.Supported(csv) || !inputfile.Supported("x.Parquet") || !inputfile.Supported("x.ndjson") {
		t.Fatal("Supported")
	}
	_, err := read(csv, inputfile.Need{})
	wantError(t, err, csv, `unsupported format ".csv": want .parquet or .jsonl`)
	if err := inputfile.Check(csv); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.jsonl")
	wantError(t, inputfile.Check(missing), missing, "cannot read: no such file or directory")
	wantError(t, inputfile.Check(dir), dir, "is a directory")
	empty := write(t, dir, "empty.jsonl", "")
	wantError(t, inputfile.Check(empty), empty, "file is empty")
	// A caller that stops early stops the reading.
	p := write(t, dir, "two.jsonl", "{}\n{}\n")
	n := 0
	for range inputfile.Rows(context.Background(), p, inputfile.Need{}) {
		n++
		break
	}
	if n != 1 {
		t.Fatal(n)
	}
}
