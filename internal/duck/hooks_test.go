package duck_test

import (
	"context"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
)

// viewHookRuns records the runs each OnViews call saw, and whether the table views existed by then.
var viewHookRuns [][]string

func init() {
	duck.OnViews(func(ctx context.Context, lk *lake.Lake, s *duck.Session) error {
		var n int64
		if err := s.DB.QueryRowContext(ctx, "select count(*) from turns").Scan(&n); err != nil {
			return err // the views must exist when the hook runs
		}
		viewHookRuns = append(viewHookRuns, s.Runs)
		_, err := s.DB.ExecContext(ctx, "create temp view hooked as select count(*) as turns from turns")
		return err
	})
}

func TestOnViewsRunsAfterTheViews(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	laketest.NewRun(t, lk, "r1", config.Default())
	laketest.Write(t, lk, lake.PartitionKey{Run: "r1", Table: "turns", Step: 0}, turns(0, 50))
	viewHookRuns = nil
	s, err := duck.OpenRuns(ctx, lk, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int64
	if err := s.DB.QueryRowContext(ctx, "select turns from hooked").Scan(&n); err != nil || n != 50 {
		t.Fatalf("hook's view: %d, %v", n, err)
	}
	if len(viewHookRuns) != 1 || len(viewHookRuns[0]) != 1 || viewHookRuns[0][0] != "r1" {
		t.Fatalf("hook calls: %v", viewHookRuns)
	}
}
