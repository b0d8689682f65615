package corpus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/corpus"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

func TestImportDedupAndOptionalColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lk := laketest.Open(t, filepath.Join(dir, "lake"))
	db, err := duck.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pq := filepath.Join(dir, "ints.parquet")
	// Integer ids, no source or domain column, a duplicate id inside the file.
	if _, err := db.Exec(fmt.Sprintf(`copy (select * from (values (1, 'one'), (2, 'two'), (1, 'one again')) v(id, text)) to '%s' (format parquet)`, pq)); err != nil {
		t.Fatal(err)
	}
	jsonl := filepath.Join(dir, "docs.jsonl")
	os.WriteFile(jsonl, []byte(`{"id": 2, "text": "dup of a parquet id"}
{"id": 30000000001, "text": "big id", "source": "s", "domain": "math"}

{"id": "x", "text": "string id", "extra": [1, 2]}
`), 0o644)
	res, err := corpus.Import(ctx, lk, "c", []string{pq, jsonl})
	if err != nil {
		t.Fatal(err)
	}
	if res != (corpus.Result{Imported: 4, Skipped: 2, Total: 4}) {
		t.Fatalf("result %+v", res)
	}
	rows, err := lake.ReadRows[schemas.CorpusRow](ctx, lk, lake.CorpusKey("c"))
	if err != nil {
		t.Fatal(err)
	}
	want := []schemas.CorpusRow{
		{DocID: "1", Text: "one"}, {DocID: "2", Text: "two"},
		{DocID: "30000000001", Text: "big id", Source: "s", Domain: "math"}, {DocID: "x", Text: "string id"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("corpus rows %+v, want %+v", rows, want)
	}
	// A re-import adds nothing and rewrites nothing.
	before, _ := lk.Manifest(ctx, lake.CorpusKey("c"))
	res, err = corpus.Import(ctx, lk, "c", []string{jsonl})
	if err != nil || res != (corpus.Result{Imported: 0, Skipped: 3, Total: 4}) {
		t.Fatalf("re-import: %+v, %v", res, err)
	}
	after, _ := lk.Manifest(ctx, lake.CorpusKey("c"))
	if after.Generation != before.Generation {
		t.Fatal("a re-import with nothing new rewrote the corpus")
	}
}

func TestImportRejectsWithoutCommitting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lk, _ := lake.Open(ctx, filepath.Join(dir, "lake"))
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"id": "a", "text": "fine"}`+"\n"), 0o644)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id": "b", "text": ""}`+"\n"), 0o644)
	_, err := corpus.Import(ctx, lk, "c", []string{good, bad})
	var ie *corpus.InputError
	if !errors.As(err, &ie) || ie.File != bad || !strings.Contains(ie.Problem, "line 1: corpus.text: required") {
		t.Fatalf("got %v, want an InputError for %s naming line 1 and corpus.text", err, bad)
	}
	if ok, _ := lk.Committed(ctx, lake.CorpusKey("c")); ok {
		t.Fatal("a rejected import committed the corpus")
	}
	if _, err := corpus.Import(ctx, lk, "no/slash", []string{good}); !errors.As(err, &ie) {
		t.Fatalf("invalid corpus name: %v", err)
	}
}
