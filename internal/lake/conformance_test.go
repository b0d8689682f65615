package lake_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/schemas"
)

// newLakeFunc returns a fresh, empty lake and its URI (for child processes, which open it themselves).
type newLakeFunc func(t *testing.T) (*lake.Lake, string)

func localLakes(t *testing.T) (*lake.Lake, string) {
	dir := t.TempDir()
	store, err := lake.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return lake.New(store, lake.NewCache(t.TempDir())), dir
}

var s3Prefixes atomic.Int64

// s3Lakes returns lakes under fresh prefixes of bucket; retry wraps the store in the default Retry.
func s3Lakes(bucket string, retry bool) newLakeFunc {
	return func(t *testing.T) (*lake.Lake, string) {
		uri := fmt.Sprintf("s3://%s/t%03d", bucket, s3Prefixes.Add(1))
		store, err := lake.OpenS3(context.Background(), uri)
		if err != nil {
			t.Fatal(err)
		}
		var s lake.Store = store
		if retry {
			s = lake.WithRetry(store, lake.RetryPolicy{Attempts: 12, Base: 5 * time.Millisecond, Max: 200 * time.Millisecond})
		}
		return lake.New(s, lake.NewCache(t.TempDir())), uri
	}
}

func TestLocalConformance(t *testing.T) { runConformance(t, localLakes) }

func TestS3Conformance(t *testing.T) {
	_, bucket := s3test.Start(t)
	runConformance(t, s3Lakes(bucket, false))
}

// runConformance is the one suite every store (and wrapper) passes.
func runConformance(t *testing.T, newLake newLakeFunc) {
	t.Run("GetPutDelete", func(t *testing.T) { testGetPutDelete(t, newLake) })
	t.Run("List", func(t *testing.T) { testList(t, newLake) })
	t.Run("PutIfAbsent", func(t *testing.T) { testPutIfAbsent(t, newLake) })
	t.Run("RacingPutIfAbsent", func(t *testing.T) { testRacingPutIfAbsent(t, newLake) })
	t.Run("Multipart", func(t *testing.T) { testMultipart(t, newLake) })
	t.Run("CommitOnce", func(t *testing.T) { testCommitOnce(t, newLake) })
	t.Run("RacingWriters", func(t *testing.T) { testRacingWriters(t, newLake) })
	t.Run("ForceIsAtomic", func(t *testing.T) { testForceIsAtomic(t, newLake) })
	t.Run("ShardsInGoroutines", func(t *testing.T) { testShardsInGoroutines(t, newLake) })
	t.Run("ShardsInProcesses", func(t *testing.T) { testShardsInProcesses(t, newLake) })
	t.Run("Fragments", func(t *testing.T) { testFragments(t, newLake) })
	t.Run("UpgradeLayoutOne", func(t *testing.T) { testUpgradeLayoutOne(t, newLake) })
}

func testGetPutDelete(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	s := lk.Store()
	if _, err := s.Get(ctx, "a/missing"); !errors.Is(err, lake.ErrNotFound) {
		t.Fatalf("Get of a missing key: got %v, want ErrNotFound", err)
	}
	for _, body := range [][]byte{[]byte("first"), []byte("second, longer"), {}} {
		if err := s.Put(ctx, "a/b/obj.json", body); err != nil {
			t.Fatal(err)
		}
		got, err := lake.ReadAll(ctx, s, "a/b/obj.json")
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("Get after Put(%q) = %q, %v", body, got, err)
		}
	}
	if err := s.Delete(ctx, "a/b/obj.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a/b/obj.json"); !errors.Is(err, lake.ErrNotFound) {
		t.Fatalf("Get after Delete: got %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "a/b/obj.json"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
}

func testList(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	s := lk.Store()
	keys := []string{"ab", "a/b/c", "a/b/d", "a/bc", "a/b/e/f", "runs/r1/run.json", "runs/r10/run.json", "runs/r2/x/y.json"}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a/b/c", "a/b/d", "a/b/e/f", "a/bc", "ab", "runs/r1/run.json", "runs/r10/run.json", "runs/r2/x/y.json"}},
		{"a/b", []string{"a/b/c", "a/b/d", "a/b/e/f", "a/bc"}},
		{"a/b/", []string{"a/b/c", "a/b/d", "a/b/e/f"}},
		{"a", []string{"a/b/c", "a/b/d", "a/b/e/f", "a/bc", "ab"}},
		{"runs/r1", []string{"runs/r1/run.json", "runs/r10/run.json"}},
		{"runs/r1/", []string{"runs/r1/run.json"}},
		{"runs/r2/x/y.json", []string{"runs/r2/x/y.json"}},
		{"runs/r2/x/y.json/", nil},
		{"zzz/", nil},
	} {
		objs, err := s.List(ctx, tc.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tc.prefix, err)
		}
		var got []string
		for _, o := range objs {
			got = append(got, o.Key)
			if o.Size != int64(len(o.Key)) {
				t.Errorf("List(%q): %s has size %d, want %d", tc.prefix, o.Key, o.Size, len(o.Key))
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func testPutIfAbsent(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	s := lk.Store()
	if err := s.PutIfAbsent(ctx, "m/_manifest.json", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "m/_manifest.json", []byte("two")); !errors.Is(err, lake.ErrExists) {
		t.Fatalf("second PutIfAbsent: got %v, want ErrExists", err)
	}
	if got, _ := lake.ReadAll(ctx, s, "m/_manifest.json"); string(got) != "one" {
		t.Fatalf("after a refused PutIfAbsent the object is %q, want %q", got, "one")
	}
}

func testRacingPutIfAbsent(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	s := lk.Store()
	const racers = 16
	var wg sync.WaitGroup
	errs := make([]error, racers)
	start := make(chan struct{})
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			errs[i] = s.PutIfAbsent(ctx, "race/_manifest.json", []byte(fmt.Sprintf("writer %02d", i)))
		}(i)
	}
	close(start)
	wg.Wait()
	winners := 0
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
			winner = i
		case !errors.Is(err, lake.ErrExists):
			t.Errorf("racer %d: %v", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d of %d racing PutIfAbsent calls won, want exactly 1", winners, racers)
	}
	if got, _ := lake.ReadAll(ctx, s, "race/_manifest.json"); string(got) != fmt.Sprintf("writer %02d", winner) {
		t.Fatalf("object is %q, want the winner's (writer %02d)", got, winner)
	}
}

func testMultipart(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	s := lk.Store()
	body := make([]byte, 17<<20+12345) // above the 16 MiB multipart threshold
	rand.Read(body)
	if err := s.Put(ctx, "big/blob.bin", body); err != nil {
		t.Fatal(err)
	}
	got, err := lake.ReadAll(ctx, s, "big/blob.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("multipart object read back %d bytes, differing from the %d written", len(got), len(body))
	}
	objs, err := s.List(ctx, "big/")
	if err != nil || len(objs) != 1 || objs[0].Size != int64(len(body)) {
		t.Fatalf("List after multipart Put = %v, %v", objs, err)
	}
}

func sortTurns(rows []schemas.TurnRow) []schemas.TurnRow {
	out := append([]schemas.TurnRow(nil), rows...)
	sort.Slice(out, func(i, j int) bool { return out[i].CallID < out[j].CallID })
	return out
}

func testCommitOnce(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	key := lake.PartitionKey{Run: "r1", Table: "turns", Step: 3}
	if _, err := lake.ReadRows[schemas.TurnRow](ctx, lk, key); !errors.Is(err, lake.ErrNotCommitted) {
		t.Fatalf("ReadRows before commit: got %v, want ErrNotCommitted", err)
	}
	rows := turnRows(2500, 7, "")
	res, err := commit(ctx, lk, key, rows, lake.WriteOptions{ChunkRows: 1000}, false)
	if err != nil || !res.Committed || res.Rows != 2500 {
		t.Fatalf("WriteRows = %+v, %v", res, err)
	}
	got, err := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read back %d rows that differ from the %d written", len(got), len(rows))
	}
	m, err := lk.Manifest(ctx, key)
	if err != nil || len(m.Files) != 3 || m.Rows != 2500 || m.SchemaVersion != schemas.TurnsSpec.Version {
		t.Fatalf("manifest = %+v, %v", m, err)
	}
	if _, err := commit(ctx, lk, key, turnRows(10, 8, ""), lake.WriteOptions{}, false); !errors.Is(err, lake.ErrCommitted) {
		t.Fatalf("re-run of a committed partition: got %v, want ErrCommitted", err)
	}
	again, _ := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
	if !reflect.DeepEqual(again, rows) {
		t.Fatal("a refused re-run changed the partition")
	}
	if steps, err := lk.Steps(ctx, "r1", "turns"); err != nil || !reflect.DeepEqual(steps, []int64{3}) {
		t.Fatalf("Steps = %v, %v", steps, err)
	}
	// An empty partition commits too ("ran, found nothing").
	empty := lake.PartitionKey{Run: "r1", Table: "turns", Step: 4}
	if res, err := commit(ctx, lk, empty, []schemas.TurnRow{}, lake.WriteOptions{}, false); err != nil || !res.Committed {
		t.Fatalf("empty WriteRows = %+v, %v", res, err)
	}
	if got, err := lake.ReadRows[schemas.TurnRow](ctx, lk, empty); err != nil || len(got) != 0 {
		t.Fatalf("empty partition read %d rows, %v", len(got), err)
	}
	// Keys without a valid run are refused.
	if _, err := commit(ctx, lk, lake.PartitionKey{Table: "turns", Step: 1}, rows[:2], lake.WriteOptions{}, false); err == nil {
		t.Fatal("a turns partition without a run was accepted")
	}
	// Rows of another table's type are refused.
	wrong := lake.PartitionKey{Run: "r1", Table: "episodes", Step: 3}
	if _, err := commit(ctx, lk, wrong, rows[:2], lake.WriteOptions{}, false); err == nil || !strings.Contains(err.Error(), "table episodes holds") {
		t.Fatalf("turns rows written as episodes: got %v, want a refusal", err)
	}
	// Invalid rows commit nothing.
	bad := turnRows(3, 1, "")
	bad[2].EpisodeID = ""
	badKey := lake.PartitionKey{Run: "r1", Table: "turns", Step: 5}
	if _, err := commit(ctx, lk, badKey, bad, lake.WriteOptions{}, false); err == nil || !strings.Contains(err.Error(), "turns.episode_id") {
		t.Fatalf("invalid row: got %v, want an error naming turns.episode_id", err)
	}
	if ok, _ := lk.Committed(ctx, badKey); ok {
		t.Fatal("invalid rows were committed")
	}
}

// testRacingWriters races writers of one partition, plain and forced: exactly one commits each round,
// and the partition holds exactly the rows of the writer that was told it committed.
func testRacingWriters(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	const writers = 6
	for round, force := range []bool{false, true, true} {
		key := lake.PartitionKey{Run: "r1", Table: "turns", Step: 8}
		var wg sync.WaitGroup
		results := make([]lake.WriteResult, writers)
		errs := make([]error, writers)
		start := make(chan struct{})
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				<-start
				results[w], errs[w] = commit(ctx, lk, key, turnRows(300, int64(10*round+w), ""), lake.WriteOptions{ChunkRows: 100}, force)
			}(w)
		}
		close(start)
		wg.Wait()
		// Each generation is committed by exactly one writer. (A forced writer that starts after
		// another's commit legitimately commits the next generation.)
		winner := -1
		byGeneration := map[int]int{}
		for w := range errs {
			switch {
			case errs[w] == nil && results[w].Committed:
				if other, dup := byGeneration[results[w].Generation]; dup {
					t.Fatalf("round %d: writers %d and %d both committed generation %d", round, other, w, results[w].Generation)
				}
				byGeneration[results[w].Generation] = w
				if winner < 0 || results[w].Generation > results[winner].Generation {
					winner = w
				}
			case errors.Is(errs[w], lake.ErrConcurrentWriter), errors.Is(errs[w], lake.ErrCommitted):
			default:
				t.Fatalf("round %d: writer %d: %+v, %v", round, w, results[w], errs[w])
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer committed", round)
		}
		if !force && len(byGeneration) != 1 {
			t.Fatalf("round %d: %d writers committed a fresh partition, want 1", round, len(byGeneration))
		}
		got, err := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
		if err != nil || !reflect.DeepEqual(got, turnRows(300, int64(10*round+winner), "")) {
			t.Fatalf("round %d: the partition does not hold the rows of writer %d, which was told it committed (%v)", round, winner, err)
		}
	}
}

func testForceIsAtomic(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	key := lake.PartitionKey{Run: "r1", Table: "turns", Step: 1}
	const n = 1200
	if _, err := commit(ctx, lk, key, turnRows(n, 1, "g0-"), lake.WriteOptions{ChunkRows: 200}, false); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	readerErr := make(chan error, 1)
	go func() {
		defer close(readerErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			rows, err := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
			if err != nil {
				readerErr <- fmt.Errorf("read during a forced rewrite: %w", err)
				return
			}
			if len(rows) != n {
				readerErr <- fmt.Errorf("read %d rows during a forced rewrite, want %d", len(rows), n)
				return
			}
			gen := rows[0].EpisodeID[:len("ep-g0-")]
			for _, r := range rows {
				if !strings.HasPrefix(r.EpisodeID, gen) {
					readerErr <- fmt.Errorf("a read mixed generations: %s and %s", gen, r.EpisodeID)
					return
				}
			}
			reads.Add(1)
		}
	}()
	for g := 1; g <= 4; g++ {
		res, err := commit(ctx, lk, key, turnRows(n, 1, fmt.Sprintf("g%d-", g)), lake.WriteOptions{ChunkRows: 200}, true)
		if err != nil || !res.Committed {
			t.Fatalf("forced write %d = %+v, %v", g, res, err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	if err := <-readerErr; err != nil {
		t.Fatal(err)
	}
	if reads.Load() == 0 {
		t.Fatal("the reader never completed a read")
	}
	rows, _ := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
	if !reflect.DeepEqual(rows, turnRows(n, 1, "g4-")) {
		t.Fatal("after forced rewrites the partition is not the last one written")
	}
	m, _ := lk.Manifest(ctx, key)
	if m.Generation != 4 {
		t.Fatalf("generation %d after 4 forced rewrites", m.Generation)
	}
	// Old generations' parts are gone: only the manifest's files remain.
	objs, err := lk.Store().List(ctx, key.Dir()+"/part-")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(m.Files) {
		t.Fatalf("%d part files remain for %d in the manifest", len(objs), len(m.Files))
	}
}

func testShardsInGoroutines(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	key := lake.PartitionKey{Run: "r1", Table: "turns", Step: 2}
	const shards = 4
	all := turnRows(2000, 3, "")
	var wg sync.WaitGroup
	results := make([]lake.WriteResult, shards)
	errs := make([]error, shards)
	for i := 0; i < shards; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = commit(ctx, lk, key, shardRows(all, i, shards), lake.WriteOptions{Shard: i, Shards: shards, ChunkRows: 200}, false)
		}(i)
	}
	wg.Wait()
	commits := 0
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if results[i].Committed {
			commits++
		}
	}
	if commits != 1 {
		t.Fatalf("%d shards report committing, want exactly 1", commits)
	}
	got, err := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sortTurns(got), sortTurns(all)) {
		t.Fatalf("sharded partition has %d rows, not the %d written", len(got), len(all))
	}
	if _, err := commit(ctx, lk, key, shardRows(all, 1, shards), lake.WriteOptions{Shard: 1, Shards: shards}, false); !errors.Is(err, lake.ErrCommitted) {
		t.Fatalf("re-run of a shard after commit: got %v, want ErrCommitted", err)
	}
	// One after another: nothing is visible until the last shard is in, and a shard re-run before
	// then (a retried, killed shard) replaces its own marker rather than adding rows.
	seq := lake.PartitionKey{Run: "r1", Table: "turns", Step: 6}
	for _, i := range []int{2, 0, 2, 3} {
		res, err := commit(ctx, lk, seq, shardRows(all, i, shards), lake.WriteOptions{Shard: i, Shards: shards, ChunkRows: 200}, false)
		if err != nil || res.Committed {
			t.Fatalf("shard %d of an incomplete partition: %+v, %v", i, res, err)
		}
		if ok, _ := lk.Committed(ctx, seq); ok {
			t.Fatalf("partition visible after shard %d with shard 1 missing", i)
		}
	}
	if res, err := commit(ctx, lk, seq, shardRows(all, 1, shards), lake.WriteOptions{Shard: 1, Shards: shards, ChunkRows: 200}, false); err != nil || !res.Committed {
		t.Fatalf("last shard: %+v, %v", res, err)
	}
	got, err = lake.ReadRows[schemas.TurnRow](ctx, lk, seq)
	if err != nil || !reflect.DeepEqual(sortTurns(got), sortTurns(all)) {
		t.Fatalf("sequential shards: %d rows (%v), want the %d written once each", len(got), err, len(all))
	}
	objs, _ := lk.Store().List(ctx, seq.Dir()+"/part-")
	if m, _ := lk.Manifest(ctx, seq); len(objs) != len(m.Files) {
		t.Fatalf("%d part files remain for %d committed: the replaced shard's parts were not removed", len(objs), len(m.Files))
	}
}

// childCmd returns a command running this test binary as a writer of the lake at uri.
func childCmd(mode, uri string, vars map[string]string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "SPADE_LAKE_TEST_URI="+uri)
	for k, v := range vars {
		cmd.Env = append(cmd.Env, "SPADE_LAKE_TEST_"+k+"="+v)
	}
	return cmd
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func testShardsInProcesses(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, uri := newLake(t)
	const shards = 4
	cmds := make([]*exec.Cmd, shards)
	outs := make([]bytes.Buffer, shards)
	for i := range cmds {
		cmds[i] = childCmd("shard", uri, map[string]string{"RUN": "r1", "STEP": "9", "ROWS": "1600", "SEED": "5",
			"CHUNK": "150", "SHARD": fmt.Sprint(i), "SHARDS": fmt.Sprint(shards)})
		cmds[i].Stderr = &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	commits := 0
	for i, cmd := range cmds {
		switch code := exitCode(cmd.Wait()); code {
		case childCommitted:
			commits++
		case childNotLast:
		default:
			t.Fatalf("shard process %d exited %d: %s", i, code, outs[i].String())
		}
	}
	if commits != 1 {
		t.Fatalf("%d shard processes committed, want exactly 1", commits)
	}
	got, err := lake.ReadRows[schemas.TurnRow](ctx, lk, lake.PartitionKey{Run: "r1", Table: "turns", Step: 9})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sortTurns(got), sortTurns(turnRows(1600, 5, ""))) {
		t.Fatalf("partition written by shard processes has %d rows, not the 1600 written", len(got))
	}
}

// testFragments: fragments of one step commit independently (each in its own transaction, refused once
// committed unless forced), ReadStep and Partitions/LocalFiles see the plain partition and every fragment, Steps lists
// the step once, and Drop removes one fragment without touching the others.
func testFragments(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, _ := newLake(t)
	plain := lake.PartitionKey{Run: "r1", Table: "turns", Step: 4}
	gen, roll := plain, plain
	gen.Fragment, roll.Fragment = "generate", "rollout"
	if _, err := lake.ReadStep[schemas.TurnRow](ctx, lk, "r1", "turns", 4); !errors.Is(err, lake.ErrNotCommitted) {
		t.Fatalf("ReadStep of an empty step: got %v, want ErrNotCommitted", err)
	}
	a, b, c := turnRows(30, 1, "a"), turnRows(40, 2, "b"), turnRows(50, 3, "c")
	for _, w := range []struct {
		key  lake.PartitionKey
		rows []schemas.TurnRow
	}{{roll, c}, {gen, b}, {plain, a}} {
		if res, err := commit(ctx, lk, w.key, w.rows, lake.WriteOptions{}, false); err != nil || !res.Committed {
			t.Fatalf("write %s: %+v, %v", w.key, res, err)
		}
	}
	if got := gen.ManifestKey(); got != "runs/r1/turns/step=4/fragment-generate/_manifest.json" {
		t.Errorf("fragment manifest key %q", got)
	}
	if _, err := commit(ctx, lk, gen, b, lake.WriteOptions{}, false); !errors.Is(err, lake.ErrCommitted) {
		t.Fatalf("re-write of a committed fragment: got %v, want ErrCommitted", err)
	}
	only, err := lake.ReadRows[schemas.TurnRow](ctx, lk, plain)
	if err != nil || len(only) != len(a) {
		t.Fatalf("ReadRows of the plain partition: %d rows, %v; want only its own %d", len(only), err, len(a))
	}
	want := append(append(append([]schemas.TurnRow{}, a...), b...), c...)
	got, err := lake.ReadStep[schemas.TurnRow](ctx, lk, "r1", "turns", 4)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadStep: %d rows, %v; want plain, generate, rollout (%d rows)", len(got), err, len(want))
	}
	parts, err := lk.Partitions(ctx, "r1", "turns")
	if err != nil || len(parts) != 3 || parts[0].Key != plain || parts[1].Key != gen || parts[2].Key != roll {
		t.Fatalf("Partitions: %+v, %v", parts, err)
	}
	files, err := lk.LocalFiles(ctx, "r1", "turns")
	if err != nil || len(files) != 3 {
		t.Fatalf("LocalFiles: %v, %v; want one file per partition", files, err)
	}
	if steps, err := lk.Steps(ctx, "r1", "turns"); err != nil || !reflect.DeepEqual(steps, []int64{4}) {
		t.Fatalf("Steps: %v, %v", steps, err)
	}
	// A fragment without a plain partition is a committed step too.
	lone := lake.PartitionKey{Run: "r1", Table: "turns", Step: 5, Fragment: "rollout"}
	if _, err := commit(ctx, lk, lone, a, lake.WriteOptions{}, false); err != nil {
		t.Fatal(err)
	}
	if rows, err := lake.ReadStep[schemas.TurnRow](ctx, lk, "r1", "turns", 5); err != nil || len(rows) != len(a) {
		t.Fatalf("ReadStep of a step with only a fragment: %d rows, %v", len(rows), err)
	}
	// Force replaces one fragment; the others stay.
	if res, err := commit(ctx, lk, gen, a[:5], lake.WriteOptions{}, true); err != nil || res.Generation != 1 {
		t.Fatalf("forced fragment: %+v, %v", res, err)
	}
	got, err = lake.ReadStep[schemas.TurnRow](ctx, lk, "r1", "turns", 4)
	if err != nil || len(got) != len(a)+5+len(c) {
		t.Fatalf("after a forced fragment: %d rows, %v", len(got), err)
	}
	// Dropping the plain partition leaves the fragments; dropping a fragment leaves the rest.
	if err := lk.Drop(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if err := lk.Drop(ctx, roll); err != nil {
		t.Fatal(err)
	}
	got, err = lake.ReadStep[schemas.TurnRow](ctx, lk, "r1", "turns", 4)
	if err != nil || !reflect.DeepEqual(got, a[:5]) {
		t.Fatalf("after dropping the plain partition and a fragment: %d rows, %v", len(got), err)
	}
	if _, err := commit(ctx, lk, lake.PartitionKey{Run: "r1", Table: "turns", Step: 4, Fragment: "a/b"}, a, lake.WriteOptions{}, false); err == nil {
		t.Fatal("a fragment name with a slash was accepted")
	}
}

// testUpgradeLayoutOne uploads testdata/lake-v1 (a lake an older spade wrote in layout 1) into the store:
// Open refuses it with ErrOldLayout; an upgrade interrupted after some objects were copied (their old
// names not yet deleted) is finished by a second Upgrade; then Open accepts the lake, Verify finds every
// committed file with its sha256 and no orphan, and the fragments of a step read back.
func testUpgradeLayoutOne(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, uri := newLake(t)
	src := filepath.Join("..", "..", "testdata", "lake-v1")
	var keys []string
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		keys = append(keys, filepath.ToSlash(rel))
		return lk.Store().Put(ctx, filepath.ToSlash(rel), body)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Open(ctx, uri); !errors.Is(err, lake.ErrOldLayout) || !strings.Contains(err.Error(), "lake upgrade") {
		t.Fatalf("Open of a layout-1 lake: %v; want ErrOldLayout naming `spade lake upgrade`", err)
	}
	// An upgrade killed midway: the first few objects already copied to their new names.
	rename := strings.NewReplacer("step=000000/", "step=0/", "step=000001/", "step=1/", "step=000002/", "step=2/", "step=000003/", "step=3/", "fragment=", "fragment-")
	renamed := 0
	for _, key := range keys {
		if rename.Replace(key) == key {
			continue // run.json
		}
		if renamed++; renamed > 5 {
			continue
		}
		body, err := lake.ReadAll(ctx, lk.Store(), key)
		if err != nil {
			t.Fatal(err)
		}
		if err := lk.Store().Put(ctx, rename.Replace(key), body); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := lk.Upgrade(ctx)
	if err != nil || rep.Moved != renamed || renamed < 50 {
		t.Fatalf("Upgrade: %+v, %v; want all %d objects in layout 1 moved", rep, err, renamed)
	}
	opened, err := lake.Open(ctx, uri)
	if err != nil {
		t.Fatalf("Open after the upgrade: %v", err)
	}
	v, err := opened.Verify(ctx, "demo", lake.VerifyOptions{})
	if err != nil || len(v.Problems) != 0 || v.Files == 0 {
		t.Fatalf("Verify after the upgrade: %+v, %v", v, err)
	}
	parts, err := opened.StepPartitions(ctx, "demo", "llm_calls", 2)
	if err != nil || len(parts) < 3 {
		t.Fatalf("llm_calls fragments of step 2 after the upgrade: %d, %v", len(parts), err)
	}
	rows, err := lake.ReadStep[schemas.LLMCallRow](ctx, opened, "demo", "llm_calls", 2)
	var want int64
	for _, p := range parts {
		want += p.Manifest.Rows
	}
	if err != nil || int64(len(rows)) != want || want == 0 {
		t.Fatalf("llm_calls of step 2: %d rows, %v; the manifests say %d", len(rows), err, want)
	}
	if again, err := opened.Upgrade(ctx); err != nil || !again.AlreadyCurrent {
		t.Fatalf("second Upgrade: %+v, %v", again, err)
	}
}
