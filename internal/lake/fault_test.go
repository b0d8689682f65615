package lake_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/schemas"
)

func TestEncodingIsDeterministic(t *testing.T) {
	rows := turnRows(5000, 3, "")
	a, err := lake.EncodeParquet(rows)
	if err != nil {
		t.Fatal(err)
	}
	b, err := lake.EncodeParquet(turnRows(5000, 3, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("identical rows encoded to different bytes: re-runs would not reproduce checksums")
	}
	back, err := lake.DecodeParquet[schemas.TurnRow](a)
	if err != nil || !reflect.DeepEqual(back, rows) {
		t.Fatalf("decode(encode(rows)) differs from rows (%v)", err)
	}
}

func TestKilledWriterLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("kills writer processes mid-write many times; skipped with -short")
	}
	testKilledWriter(t, localLakes, 6)
}

func TestKilledWriterS3(t *testing.T) {
	if testing.Short() {
		t.Skip("kills writer processes mid-write many times; skipped with -short")
	}
	_, bucket := s3test.Start(t)
	testKilledWriter(t, s3Lakes(bucket, true), 4)
}

// testKilledWriter kills writer processes with SIGKILL at random moments of a multi-file partition write,
// while a reader polls the partition: the reader must see nothing or all of it, and a re-run must commit
// the same rows with the same checksums as a clean encoding of them.
func testKilledWriter(t *testing.T, newLake newLakeFunc, kills int) {
	ctx := context.Background()
	lk, uri := newLake(t)
	const rows, chunk, seed = 24000, 3000, 21
	want := turnRows(rows, seed, "")
	var wantSums []string
	for i := 0; i < rows; i += chunk {
		body, err := lake.EncodeParquet(want[i:min(i+chunk, rows)])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		wantSums = append(wantSums, hex.EncodeToString(sum[:]))
	}
	vars := func(step int) map[string]string {
		return map[string]string{"RUN": "r1", "STEP": fmt.Sprint(step), "ROWS": fmt.Sprint(rows), "SEED": fmt.Sprint(seed), "CHUNK": fmt.Sprint(chunk)}
	}
	// How long one whole write takes, process start included, sets the range of kill moments.
	began := time.Now()
	if out, err := childCmd("write", uri, vars(1000)).CombinedOutput(); err != nil {
		t.Fatalf("clean writer: %v: %s", err, out)
	}
	full := time.Since(began)

	var step atomic.Int64
	stop := make(chan struct{})
	var readerErr error
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the reader: a partition is invisible or complete, never partial
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			key := lake.PartitionKey{Run: "r1", Table: "turns", Step: step.Load()}
			got, err := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
			if err == nil && len(got) != rows {
				readerErr = fmt.Errorf("%s: a reader saw %d of %d rows", key, len(got), rows)
				return
			}
			if err != nil && !strings.Contains(err.Error(), lake.ErrNotCommitted.Error()) {
				readerErr = fmt.Errorf("%s: %w", key, err)
				return
			}
			reads.Add(1)
			time.Sleep(time.Millisecond) // leave the CPU to the writer
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	partial := 0
	for i := 1; i <= kills; i++ {
		step.Store(int64(i))
		key := lake.PartitionKey{Run: "r1", Table: "turns", Step: int64(i)}
		cmd := childCmd("write", uri, vars(i))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			// Half the kills land once the first part is uploaded, the heart of the window.
			deadline := time.Now().Add(3 * full)
			for time.Now().Before(deadline) {
				if objs, _ := lk.Store().List(ctx, key.Dir()+"/part-"); len(objs) > 0 {
					break
				}
			}
			time.Sleep(time.Duration(rng.Int64N(int64(full / 4))))
		} else {
			time.Sleep(time.Duration(rng.Int64N(int64(full))))
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		committed, err := lk.Committed(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !committed {
			if objs, _ := lk.Store().List(ctx, key.Dir()+"/"); len(objs) > 0 {
				partial++ // killed mid-write: parts uploaded, no manifest
			}
		}
		// The re-run commits (or finds the killed writer's complete commit) the same rows.
		rerun := childCmd("write", uri, vars(i))
		out, err := rerun.CombinedOutput()
		code := exitCode(err)
		if code != childCommitted && code != childAlready {
			t.Fatalf("re-run after kill %d exited %d: %s", i, code, out)
		}
		if committed && code != childAlready {
			t.Fatalf("kill %d: the partition was committed but the re-run did not say so (exit %d)", i, code)
		}
		m, err := lk.Manifest(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var sums []string
		for _, f := range m.Files {
			sums = append(sums, f.SHA256)
		}
		if !reflect.DeepEqual(sums, wantSums) {
			t.Fatalf("kill %d: re-run committed checksums %v, want %v", i, sums, wantSums)
		}
		got, err := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("kill %d: re-run rows differ (%v)", i, err)
		}
		if code == childCommitted { // the killed writer's leftovers are orphans, and vacuum removes them
			if _, err := lk.Vacuum(ctx, key.Run, lake.VacuumOptions{}); err != nil {
				t.Fatal(err)
			}
			objs, _ := lk.Store().List(ctx, key.Dir()+"/part-")
			if len(objs) != len(m.Files) {
				t.Fatalf("kill %d: %d part files remain for %d committed", i, len(objs), len(m.Files))
			}
		}
	}
	close(stop)
	wg.Wait()
	if readerErr != nil {
		t.Fatal(readerErr)
	}
	t.Logf("%d kills (%d mid-write, leaving parts but no manifest) over writes of %v; the reader checked %d times", kills, partial, full, reads.Load())
}

func TestTwoProcessesCommitOnceLocal(t *testing.T) { testTwoProcessesCommitOnce(t, localLakes) }

func TestTwoProcessesCommitOnceS3(t *testing.T) {
	_, bucket := s3test.Start(t)
	testTwoProcessesCommitOnce(t, s3Lakes(bucket, true))
}

// testTwoProcessesCommitOnce starts two writer processes on the same partition at the same instant:
// exactly one commits, and the other is told clearly that another writer won.
func testTwoProcessesCommitOnce(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, uri := newLake(t)
	sawConcurrent := false
	for attempt := 1; attempt <= 5 && !sawConcurrent; attempt++ {
		startAt := time.Now().Add(400 * time.Millisecond).UnixNano()
		var outs [2]bytes.Buffer
		var codes [2]int
		var wg sync.WaitGroup
		for w := 0; w < 2; w++ {
			cmd := childCmd("write", uri, map[string]string{"RUN": "r1", "STEP": fmt.Sprint(attempt), "ROWS": "20000",
				"SEED": fmt.Sprint(100 + w), "CHUNK": "5000", "START_AT": fmt.Sprint(startAt)})
			cmd.Stderr = &outs[w]
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func(w int) { defer wg.Done(); codes[w] = exitCode(cmd.Wait()) }(w)
		}
		wg.Wait()
		winners := 0
		winner := -1
		for w, code := range codes {
			switch code {
			case childCommitted:
				winners++
				winner = w
			case childConcurrent:
				sawConcurrent = true
				msg := outs[w].String()
				if !strings.Contains(msg, "another writer committed this partition first") || !strings.Contains(msg, "nothing of this writer was committed") {
					t.Fatalf("loser's message is unclear: %s", msg)
				}
			case childAlready:
			default:
				t.Fatalf("writer %d exited %d: %s", w, code, outs[w].String())
			}
		}
		if winners != 1 {
			t.Fatalf("attempt %d: %d writers committed, want exactly 1 (exit codes %v)", attempt, winners, codes)
		}
		key := lake.PartitionKey{Run: "r1", Table: "turns", Step: int64(attempt)}
		got, err := lake.ReadRows[schemas.TurnRow](ctx, lk, key)
		if err != nil || !reflect.DeepEqual(got, turnRows(20000, int64(100+winner), "")) {
			t.Fatalf("attempt %d: the partition is not the winner's rows (%v)", attempt, err)
		}
		objs, _ := lk.Store().List(ctx, key.Dir()+"/part-")
		if len(objs) != 4 {
			t.Fatalf("attempt %d: %d part files, want only the winner's 4", attempt, len(objs))
		}
	}
	if !sawConcurrent {
		t.Fatal("in 5 attempts the two writers never overlapped: ErrConcurrentWriter was never exercised")
	}
}
