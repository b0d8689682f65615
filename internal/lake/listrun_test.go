package lake_test

import (
	"context"
	"slices"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/schemas"
)

func TestListRunLocal(t *testing.T) { testListRun(t, localLakes) }

func TestListRunS3(t *testing.T) {
	_, bucket := s3test.Start(t)
	testListRun(t, s3Lakes(bucket, false))
}

// testListRun checks that one listing of a run (ListRun) says what LocalFiles and Steps say table by
// table, over partitions committed both ways: a stage's record (a plain partition and fragments, at two
// steps, one of them forced again) and a partition's own manifest.
func testListRun(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	for _, write := range []struct {
		step  int64
		force bool
	}{{1, false}, {3, false}, {1, true}} {
		tx := lk.Begin(lake.TxnSpec{Run: "r1", Stage: "rollout", Step: write.step, Force: write.force})
		for i, fragment := range stagePartitions {
			key := lake.PartitionKey{Run: "r1", Table: "turns", Step: write.step, Fragment: fragment}
			if _, err := lake.WriteRows(ctx, tx, key, turnRows(50, int64(i), "x"), lake.WriteOptions{ChunkRows: 20}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := commit(ctx, lk, lake.PartitionKey{Run: "r1", Table: "turns", Step: 2}, turnRows(30, 9, "y"), lake.WriteOptions{}, false); err != nil {
		t.Fatal(err)
	}
	listing, err := lk.ListRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range schemas.RunTables() {
		files, err := lk.LocalFiles(ctx, "r1", table)
		if err != nil {
			t.Fatal(err)
		}
		steps, err := lk.Steps(ctx, "r1", table)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(listing.Files[table], files) {
			t.Errorf("%s: ListRun files %v, LocalFiles %v", table, listing.Files[table], files)
		}
		if !slices.Equal(listing.Steps[table], steps) {
			t.Errorf("%s: ListRun steps %v, Steps %v", table, listing.Steps[table], steps)
		}
	}
	if got := listing.Steps["turns"]; !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("turns steps %v, want [1 2 3]", got)
	}
}
