package lake_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// childEnv selects a child mode: the test binary re-executes itself to get real writer processes that
// can be killed with SIGKILL or race each other.
const childEnv = "SPADE_LAKE_TEST_CHILD"

// Exit codes of a child writer.
const (
	childCommitted  = 0
	childFailed     = 1
	childNotLast    = 2 // a shard that was not the last one in
	childConcurrent = 3
	childAlready    = 4
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// benchDirs are removed when the test binary ends (fixtures shared between benchmark runs).
var benchDirs []string

// childMain writes a partition described by the environment:
// SPADE_LAKE_TEST_URI, _RUN, _STEP, _ROWS, _SEED, _CHUNK, _SHARD, _SHARDS, _FORCE, _START_AT (unix ns).
func childMain(mode string) int {
	env := func(name string) string { return os.Getenv("SPADE_LAKE_TEST_" + name) }
	num := func(name string) int { n, _ := strconv.Atoi(env(name)); return n }
	if at := env("START_AT"); at != "" { // line racing writers up on the same instant
		n, _ := strconv.ParseInt(at, 10, 64)
		time.Sleep(time.Until(time.Unix(0, n)))
	}
	ctx := context.Background()
	lk, err := lake.Open(ctx, env("URI"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return childFailed
	}
	if mode == "stage" {
		return childStage(ctx, lk, env, num)
	}
	key := lake.PartitionKey{Run: env("RUN"), Table: "turns", Step: int64(num("STEP"))}
	rows := turnRows(num("ROWS"), int64(num("SEED")), "")
	if mode == "shard" {
		n, shards := num("SHARD"), num("SHARDS")
		rows = shardRows(rows, n, shards)
	}
	res, err := commit(ctx, lk, key, rows, lake.WriteOptions{
		Shard: num("SHARD"), Shards: num("SHARDS"), ChunkRows: num("CHUNK")}, env("FORCE") == "1")
	switch {
	case errors.Is(err, lake.ErrConcurrentWriter):
		fmt.Fprintln(os.Stderr, err)
		return childConcurrent
	case errors.Is(err, lake.ErrCommitted):
		fmt.Fprintln(os.Stderr, err)
		return childAlready
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return childFailed
	case !res.Committed:
		return childNotLast
	}
	return childCommitted
}

// turnRows returns n deterministic turns rows of about 200 bytes each; tag marks every row (to tell
// generations apart).
func turnRows(n int, seed int64, tag string) []schemas.TurnRow {
	rows := make([]schemas.TurnRow, n)
	for i := range rows {
		x := uint64(seed)*0x9E3779B97F4A7C15 + uint64(i)*0xBF58476D1CE4E5B9
		x ^= x >> 31
		rows[i] = schemas.TurnRow{
			Step:        1,
			EpisodeID:   fmt.Sprintf("ep-%s%d-%06d", tag, seed, i/25),
			EnvID:       fmt.Sprintf("env-%03d", x%97),
			Turn:        int32(i % 25),
			Observation: fmt.Sprintf("You are at cell (%d, %d). The grid shows %x. You carry %d coins and a lamp. Choose a move.", x%13, x%17, x%1000003, x%50),
			Action:      []string{"up", "down", "left", "right", "wait"}[x%5],
			Reward:      float64(x%1000) / 1000,
			Done:        i%25 == 24,
			Info:        fmt.Sprintf(`{"success": %t, "score": %d}`, x%3 == 0, x%100),
			CallID:      fmt.Sprintf("call-%s%d-%07d", tag, seed, i),
		}
	}
	return rows
}

// shardRows is shard i of n of rows (round robin).
func shardRows(rows []schemas.TurnRow, shard, shards int) []schemas.TurnRow {
	var out []schemas.TurnRow
	for i := shard; i < len(rows); i += shards {
		out = append(out, rows[i])
	}
	return out
}

func TestTurnRowsAreAbout200Bytes(t *testing.T) {
	rows := turnRows(1000, 1, "")
	total := 0
	for _, r := range rows {
		total += 8 + len(r.EpisodeID) + len(r.EnvID) + 4 + len(r.Observation) + len(r.Action) + 8 + 1 + len(r.Info) + len(r.CallID)
	}
	if avg := total / len(rows); avg < 150 || avg > 260 {
		t.Fatalf("test rows average %d bytes, want about 200", avg)
	}
}

// stagePartitions are the partitions the "stage" child writes in one transaction, like a rollout writes
// llm_calls, turns and episodes: the step's plain partition and two fragments.
var stagePartitions = []string{"", "calls", "episodes"}

// childStage writes stagePartitions of turns at STEP in one transaction of stage "rollout" (FORCE for a
// forced rewrite), each partition with ROWS rows of SEED tagged TAG, and commits it.
func childStage(ctx context.Context, lk *lake.Lake, env func(string) string, num func(string) int) int {
	step := int64(num("STEP"))
	tx := lk.Begin(lake.TxnSpec{Run: env("RUN"), Stage: "rollout", Step: step, Force: env("FORCE") == "1"})
	for i, fragment := range stagePartitions {
		key := lake.PartitionKey{Run: env("RUN"), Table: "turns", Step: step, Fragment: fragment}
		rows := turnRows(num("ROWS"), int64(num("SEED")+i), env("TAG"))
		if _, err := lake.WriteRows(ctx, tx, key, rows, lake.WriteOptions{ChunkRows: num("CHUNK")}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			tx.Abort(ctx)
			if errors.Is(err, lake.ErrConcurrentWriter) {
				return childConcurrent
			}
			return childFailed
		}
	}
	if _, err := tx.Commit(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, lake.ErrConcurrentWriter) {
			return childConcurrent
		}
		return childFailed
	}
	return childCommitted
}

// commit writes rows as key in a transaction of its own (lake.CommitRows), as a writer outside stages
// does: one record per partition (stage w-<table>[-<fragment>]) for a run key, the key's manifest for a
// corpus key; opts' shard is the transaction's, and force replaces a committed generation.
func commit[T schemas.Row](ctx context.Context, lk *lake.Lake, key lake.PartitionKey, rows []T, opts lake.WriteOptions, force bool) (lake.WriteResult, error) {
	stage := "w-" + key.Table
	if key.Fragment != "" {
		stage += "-" + key.Fragment
	}
	spec := lake.TxnSpec{Run: key.Run, Corpus: key.Corpus, Stage: stage, Step: key.Step, Shard: opts.Shard, Shards: opts.Shards, Force: force}
	return lake.CommitRows(ctx, lk, spec, key, rows, opts)
}
