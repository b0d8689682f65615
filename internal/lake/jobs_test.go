package lake_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/spadekit/spade/internal/lake"
)

// TestJobRecordsAndShardsDone: job records are created once, read back in name order and are not
// orphans to verify; ShardsDone names the shard processes of an uncommitted stage that finished, and
// none once a commit supersedes them.
func TestJobRecordsAndShardsDone(t *testing.T) {
	ctx := context.Background()
	lk, _ := localLakes(t)
	for _, name := range []string{"b-2", "a-1"} {
		if err := lk.PutJobRecord(ctx, "r1", name, []byte(fmt.Sprintf(`{"job":%q}`, name))); err != nil {
			t.Fatal(err)
		}
	}
	if err := lk.PutJobRecord(ctx, "r1", "a-1", []byte(`{}`)); !errors.Is(err, lake.ErrExists) {
		t.Errorf("a second record under one name: %v, want ErrExists", err)
	}
	if err := lk.PutJobRecord(ctx, "r1", "x/y", []byte(`{}`)); err == nil {
		t.Error("a record name with a slash was accepted")
	}
	recs, err := lk.JobRecords(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || string(recs[0]) != `{"job":"a-1"}` || string(recs[1]) != `{"job":"b-2"}` {
		t.Errorf("records %q", recs)
	}

	// Shard 1 of 3 finishes rollout at step 4; shards 0 and 2 have not run.
	write := func(shard int) {
		tx := lk.Begin(lake.TxnSpec{Run: "r1", Stage: "rollout", Step: 4, Shard: shard, Shards: 3})
		key := lake.PartitionKey{Run: "r1", Table: "turns", Step: 4}
		if _, err := lake.WriteRows(ctx, tx, key, turnRows(10, int64(shard), "s"), lake.WriteOptions{Shard: shard, Shards: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	done, err := lk.ShardsDone(ctx, "r1", "rollout", 4, 3)
	if err != nil || !slices.Equal(done, []int{1}) {
		t.Errorf("ShardsDone after shard 1: %v, %v; want [1]", done, err)
	}
	if done, _ := lk.ShardsDone(ctx, "r1", "rollout", 4, 2); len(done) != 0 {
		t.Errorf("ShardsDone for another shard count: %v, want none", done)
	}
	write(0)
	write(2)
	if ok, err := lk.Committed(ctx, lake.PartitionKey{Run: "r1", Table: "turns", Step: 4}); !ok || err != nil {
		t.Fatalf("the three shards did not commit: %v %v", ok, err)
	}
	if done, _ := lk.ShardsDone(ctx, "r1", "rollout", 4, 3); len(done) != 0 {
		t.Errorf("ShardsDone after the commit: %v, want none (the next generation has none)", done)
	}
	rep, err := lk.Verify(ctx, "r1", lake.VerifyOptions{SkipHash: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if p.Kind == lake.ProblemOrphan && slices.Contains([]string{"runs/r1/_jobs/a-1.json", "runs/r1/_jobs/b-2.json"}, p.Key) {
			t.Errorf("verify calls a job record an orphan: %+v", p)
		}
	}
}
