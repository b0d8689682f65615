package laketest_test

import (
	"errors"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// TestRunHoldsItsConfigAndRows: Run gives a lake of one run, "r", whose config is the one given; Write
// commits a partition that reads back, and New gives each test a lake of its own.
func TestRunHoldsItsConfigAndRows(t *testing.T) {
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 3
	lk, run := laketest.Run(t, cfg)
	if runs, err := lk.Runs(t.Context()); err != nil || len(runs) != 1 || runs[0] != run || run != "r" {
		t.Fatalf("runs %v (%v), want [r]", runs, err)
	}
	got, err := lk.RunConfig(t.Context(), run)
	if err != nil || got.Sample.RefreshEvery != 3 {
		t.Fatalf("run config: refresh_every %v (%v), want 3", got, err)
	}
	key := lake.PartitionKey{Run: run, Table: schemas.TurnsSpec.Name, Step: 2}
	rows := []schemas.TurnRow{{Step: 2, EpisodeID: "e", EnvID: "env", Info: "{}", Observation: "o", Action: "a"}}
	laketest.Write(t, lk, key, rows)
	back, err := lake.ReadRows[schemas.TurnRow](t.Context(), lk, key)
	if err != nil || len(back) != 1 || back[0].EpisodeID != "e" {
		t.Fatalf("read back %+v (%v)", back, err)
	}
	if _, err := laketest.New(t).RunConfig(t.Context(), run); !errors.Is(err, lake.ErrNoRun) {
		t.Fatalf("a second New lake sees run %s: %v", run, err)
	}
	if name := laketest.NewRun(t, lk, "other", nil); name != "other" {
		t.Fatalf("NewRun returned %q", name)
	}
	if def, err := lk.RunConfig(t.Context(), "other"); err != nil || def.Sample.RefreshEvery != config.Default().Sample.RefreshEvery {
		t.Fatalf("a nil config is not the default: %v", err)
	}
}
