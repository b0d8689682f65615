package lake_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// TestUpgradeTurnsManifestsIntoRecords: a layout-2 lake whose run partition is committed by its own
// _manifest.json (as writes outside stages committed them) is refused by Open with the upgrade command;
// Upgrade turns the manifest into a record of stage "upgrade" at the step, after which Open reads the
// same rows, the manifest is gone and verify is clean; a second Upgrade does nothing. A layout-2 lake
// without such a manifest opens as it is.
func TestUpgradeTurnsManifestsIntoRecords(t *testing.T) {
	ctx := context.Background()
	lk, dir := localLakes(t)
	if err := lk.CreateRun(ctx, "r1", config.Default()); err != nil {
		t.Fatal(err)
	}
	key := lake.PartitionKey{Run: "r1", Table: "turns", Step: 2, Fragment: "rollout"}
	want := turnRows(30, 5, "m")
	if _, err := commit(ctx, lk, key, want, lake.WriteOptions{ChunkRows: 10}, false); err != nil {
		t.Fatal(err)
	}
	store := lk.Store()
	// A layout-2 lake without manifests: accepted.
	if err := store.Put(ctx, "_lake.json", []byte(`{"layout":2}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Open(ctx, dir); err != nil {
		t.Fatalf("a layout-2 lake without run manifests: %v", err)
	}
	// Rewrite the partition as layout 2 committed it outside stages: its manifest, no record.
	recordKey := "runs/r1/_commits/step=2/w-turns-rollout/g000000.json"
	body, err := lake.ReadAll(ctx, store, recordKey)
	if err != nil {
		t.Fatal(err)
	}
	var rec lake.Record
	if err := json.Unmarshal(body, &rec); err != nil || len(rec.Partitions) != 1 {
		t.Fatalf("record %s: %v", body, err)
	}
	man, _ := json.Marshal(rec.Partitions[0].Manifest)
	if err := store.Put(ctx, key.ManifestKey(), man); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, recordKey); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, "_lake.json", []byte(`{"layout":2}`)); err != nil {
		t.Fatal(err)
	}

	if _, err := lake.Open(ctx, dir); !errors.Is(err, lake.ErrOldLayout) {
		t.Fatalf("Open of a layout-2 lake with a run manifest: %v, want ErrOldLayout", err)
	}
	up, err := lake.OpenForUpgrade(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := up.Upgrade(ctx)
	if err != nil || rep.Converted != 1 || rep.Moved != 0 {
		t.Fatalf("upgrade: %+v, %v; want one manifest converted and nothing renamed", rep, err)
	}
	if _, err := store.Get(ctx, key.ManifestKey()); !errors.Is(err, lake.ErrNotFound) {
		t.Fatalf("the manifest is still there after the upgrade: %v", err)
	}
	after, err := lake.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := lake.ReadRows[schemas.TurnRow](ctx, after, key)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after the upgrade: %d rows, %v; want the %d written", len(got), err, len(want))
	}
	if _, err := lake.ReadAll(ctx, store, "runs/r1/_commits/step=2/upgrade/g000000.json"); err != nil {
		t.Fatalf("no upgrade record: %v", err)
	}
	vr, err := after.Verify(ctx, "r1", lake.VerifyOptions{})
	if err != nil || len(vr.Problems) > 0 {
		t.Fatalf("verify after the upgrade: %+v, %v", vr, err)
	}
	if rep, err := up.Upgrade(ctx); err != nil || !rep.AlreadyCurrent {
		t.Fatalf("second upgrade: %+v, %v; want nothing to do", rep, err)
	}
}
