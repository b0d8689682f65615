package schemas_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/spadekit/spade/schemas"
)

// poolRowV1 is the pools row as schema version 1 wrote it (no format, name, validated, meta or
// allowed_imports).
type poolRowV1 struct {
	EntryID    string          `parquet:"id"`
	Code       string          `parquet:"code"`
	Hint       string          `parquet:"hint"`
	Skill      string          `parquet:"skill"`
	Setting    schemas.Setting `parquet:"setting"`
	ClassName  string          `parquet:"class_name"`
	CodeSHA256 string          `parquet:"code_sha256"`
	Source     string          `parquet:"source"`
}

// TestPoolsV1RowsReadAsV2 checks that a version 1 file reads with the version 2 columns empty, and valid.
func TestPoolsV1RowsReadAsV2(t *testing.T) {
	var buf bytes.Buffer
	v1 := poolRowV1{EntryID: "a", Code: "class A: pass", Setting: schemas.SettingGames, ClassName: "A", CodeSHA256: strings.Repeat("0", 64), Source: "a.py"}
	if err := parquet.Write(&buf, []poolRowV1{v1}); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[schemas.PoolRow](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(rows) != 1 {
		t.Fatalf("read: %v %v", rows, err)
	}
	if r := rows[0]; r.EntryID != "a" || r.ClassName != "A" || r.Format != "" || r.Name != "" || r.Validated || r.Meta != "" ||
		len(r.AllowedImports) != 0 || r.Validate() != nil {
		t.Fatalf("v1 row read as %+v (%v)", r, r.Validate())
	}
	bad := rows[0]
	bad.Format = schemas.PoolRLVE // an rlve program needs its RLVE identifier
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "pools.name") {
		t.Fatalf("an rlve row without a name: %v", err)
	}
}
