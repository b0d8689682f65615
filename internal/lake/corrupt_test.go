package lake_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/schemas"
)

// flipEveryByte flips the byte at every offset of path in turn (every stride-th offset), calls read
// after each flip and restores the file; read must fail with a *lake.CorruptError each time.
func flipEveryByte(t *testing.T, path string, stride int, read func() error) int {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for off := 0; off < len(body); off += stride {
		bad := append([]byte(nil), body...)
		bad[off] ^= 0x5a
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		var ce *lake.CorruptError
		if err := read(); !errors.As(err, &ce) {
			t.Fatalf("offset %d of %d: read gave %v, want a CorruptError", off, len(body), err)
		}
		checked++
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatalf("the restored file: %v", err)
	}
	return checked
}

// A flipped byte at every offset of a small committed file: every read (the rows, and the local files a
// DuckDB view is made over) fails with an error naming the file, its table and step and the repair,
// and none returns rows; on S3 the same holds for the cache's copy of the object.
func TestFlippedByteNeverGivesRows(t *testing.T) {
	ctx := context.Background()
	rows := []schemas.EMAStateRow{{Step: 3, Skill: "math_reasoning", MuFast: 0.5, MuSlow: 0.4, GammaFast: 0.5, GammaSlow: 0.1, Rounds: 2}}
	key := lake.PartitionKey{Run: "r", Table: schemas.EMAStateSpec.Name, Step: 3}
	check := func(t *testing.T, lk *lake.Lake, stride int) {
		lk.SetRepairHint(func(p lake.PartitionKey) string { return "spade --run r regret --step 3 --force" })
		files, err := lk.LocalFiles(ctx, "r", key.Table)
		if err != nil || len(files) != 1 {
			t.Fatalf("files %v %v", files, err)
		}
		read := func() error {
			got, err := lake.ReadRows[schemas.EMAStateRow](ctx, lk, key)
			if err == nil && len(got) != 1 {
				t.Fatalf("rows %v", got)
			}
			if err != nil && len(got) != 0 {
				t.Fatalf("rows returned with the error %v", err)
			}
			if err != nil {
				return err
			}
			_, err = lk.LocalFiles(ctx, "r", key.Table)
			return err
		}
		readFiles := func() error { _, err := lk.LocalFiles(ctx, "r", key.Table); return err }
		n := flipEveryByte(t, files[0], stride, read)
		m := flipEveryByte(t, files[0], stride, readFiles)
		var ce *lake.CorruptError
		body, _ := os.ReadFile(files[0])
		os.WriteFile(files[0], append(body[:len(body)/2:len(body)/2], body[len(body)/2+1:]...), 0o644) // one byte shorter
		if err := readFiles(); !errors.As(err, &ce) || ce.Partition != key || ce.Repair == "" {
			t.Fatalf("a shortened file: %v", err)
		} else {
			t.Logf("%d and %d offsets flipped; a shortened file: %v", n, m, err)
		}
		os.WriteFile(files[0], body, 0o644)
	}
	t.Run("local", func(t *testing.T) {
		lk, _ := localLakes(t)
		if _, err := commit(ctx, lk, key, rows, lake.WriteOptions{}, false); err != nil {
			t.Fatal(err)
		}
		check(t, lk, 1)
	})
	t.Run("s3", func(t *testing.T) {
		_, bucket := s3test.Start(t)
		lk, _ := s3Lakes(bucket, false)(t)
		if _, err := commit(ctx, lk, key, rows, lake.WriteOptions{}, false); err != nil {
			t.Fatal(err)
		}
		check(t, lk, 7) // the cache's copy of the object
	})
}
