package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// benchTurns returns n turns rows of about 200 bytes for step, rewards cycling through 0, 0.25, 0.5, 0.75.
func benchTurns(step int64, n int) []schemas.TurnRow {
	rows := make([]schemas.TurnRow, n)
	for i := range rows {
		rows[i] = schemas.TurnRow{
			Step: step, EpisodeID: fmt.Sprintf("ep-%d-%07d", step, i/25), EnvID: fmt.Sprintf("env-%03d", i%97), Turn: int32(i % 25),
			Observation: fmt.Sprintf("You are at cell (%d, %d). The grid shows %x. You carry %d coins and a lamp. Choose a move.", i%13, i%17, i*7919, i%50),
			Action:      []string{"up", "down", "left", "right", "wait"}[i%5], Reward: float64(i%4) / 4, Done: i%25 == 24,
			Info: fmt.Sprintf(`{"success": %t, "score": %d}`, i%3 == 0, i%100), CallID: fmt.Sprintf("call-%d-%08d", step, i),
		}
	}
	return rows
}

// The 5M-row lake is built once per test binary: the benchmark harness calls a benchmark more than once.
var (
	bigLakeOnce sync.Once
	bigLakeEnv  []string
	bigLakeErr  error
)

func makeBigLake() ([]string, error) {
	ctx := context.Background()
	uri := filepath.Join(testTmp, "big-lake")
	env := []string{"SPADE_LAKE=" + uri, "SPADE_CACHE=" + filepath.Join(testTmp, "big-cache"), "SPADE_RUN="}
	cmd := exec.Command(spadeBin, "--run", "big", "init")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("init: %v: %s", err, out)
	}
	lk, err := lake.Open(ctx, uri)
	if err != nil {
		return nil, err
	}
	for step := int64(0); step < 5; step++ {
		if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "big", Table: "turns", Step: step}, benchTurns(step, 1_000_000), lake.WriteOptions{}); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// BenchmarkQuery5M times `spade query "select count(*), avg(reward) from turns"` (the binary, as a user
// runs it) over a local run of 5,000,000 turns rows in 5 partitions.
func BenchmarkQuery5M(b *testing.B) {
	bigLakeOnce.Do(func() { bigLakeEnv, bigLakeErr = makeBigLake() })
	if bigLakeErr != nil {
		b.Fatal(bigLakeErr)
	}
	env := bigLakeEnv
	b.ResetTimer()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r := spade(b, env, "", "--run", "big", "query", "--format", "csv", "select count(*), avg(reward) from turns")
		elapsed += time.Since(start)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "count_star(),avg(reward)\n5000000,0.375" {
			b.Fatalf("query: exit %d, %q %s", r.code, r.stdout, r.stderr)
		}
	}
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/query")
}
