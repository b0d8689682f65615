package lake_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/schemas"
)

func TestKilledForcedStageLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("kills forced stage writers many times; skipped with -short")
	}
	testKilledForcedStage(t, localLakes, 8)
}

func TestKilledForcedStageS3(t *testing.T) {
	if testing.Short() {
		t.Skip("kills forced stage writers many times; skipped with -short")
	}
	_, bucket := s3test.Start(t)
	testKilledForcedStage(t, s3Lakes(bucket, true), 5)
}

// stageVars are the child's settings for a stage write of tag at step.
func stageVars(step int, tag string, force bool) map[string]string {
	f := "0"
	if force {
		f = "1"
	}
	return map[string]string{"RUN": "r1", "STEP": fmt.Sprint(step), "ROWS": "6000", "SEED": "5", "CHUNK": "1500", "TAG": tag, "FORCE": f}
}

// stageTags returns, for every partition of stagePartitions at step, the tag of its rows (read from the
// first row's episode id), "" when not committed.
func stageTags(t *testing.T, lk *lake.Lake, step int64) []string {
	t.Helper()
	var tags []string
	for _, fragment := range stagePartitions {
		rows, err := lake.ReadRows[schemas.TurnRow](context.Background(), lk, lake.PartitionKey{Run: "r1", Table: "turns", Step: step, Fragment: fragment})
		if err != nil && !strings.Contains(err.Error(), lake.ErrNotCommitted.Error()) {
			t.Fatal(err)
		}
		tag := ""
		if len(rows) > 0 {
			tag = strings.TrimPrefix(rows[0].EpisodeID, "ep-")[:3]
		}
		if len(rows) != 0 && len(rows) != 6000 {
			t.Fatalf("fragment %q: %d rows, want 6000", fragment, len(rows))
		}
		tags = append(tags, tag)
	}
	return tags
}

// testKilledForcedStage commits a stage's three partitions, then SIGKILLs forced rewrites of them at
// random moments: after every kill all three are of one generation (all old or all new), verify lists
// the killed writer's parts as orphans and nothing else, vacuum removes them, and a re-run commits the
// same bytes as a clean one.
func testKilledForcedStage(t *testing.T, newLake newLakeFunc, kills int) {
	ctx := context.Background()
	lk, uri := newLake(t)
	if out, err := childCmd("stage", uri, stageVars(1, "old", false)).CombinedOutput(); err != nil {
		t.Fatalf("first commit: %v: %s", err, out)
	}
	began := time.Now()
	if out, err := childCmd("stage", uri, stageVars(2, "new", false)).CombinedOutput(); err != nil {
		t.Fatalf("clean writer: %v: %s", err, out)
	}
	full := time.Since(began)
	clean, err := lk.Partitions(ctx, "r1", "turns")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	mixedSeen := map[string]bool{}
	for i := 0; i < kills; i++ {
		cmd := childCmd("stage", uri, stageVars(1, "new", true))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(full))))
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		tags := stageTags(t, lk, 1)
		for _, tag := range tags[1:] {
			if tag != tags[0] {
				t.Fatalf("kill %d: the stage's partitions are at different generations: %v", i, tags)
			}
		}
		mixedSeen[tags[0]] = true
		if tags[0] == "new" { // the kill came after the commit: start over from an old generation
			if out, err := childCmd("stage", uri, stageVars(1, "old", true)).CombinedOutput(); err != nil {
				t.Fatalf("reset: %v: %s", err, out)
			}
		}
		rep, err := lk.Verify(ctx, "r1", lake.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			if p.Kind != lake.ProblemOrphan && p.Kind != lake.ProblemTemporary {
				t.Fatalf("kill %d: verify: %+v", i, p)
			}
		}
		if _, err := lk.Vacuum(ctx, "r1", lake.VacuumOptions{}); err != nil {
			t.Fatal(err)
		}
		if rep, err := lk.Verify(ctx, "r1", lake.VerifyOptions{}); err != nil || len(rep.Problems) > 0 {
			t.Fatalf("kill %d: verify after vacuum: %v %+v", i, err, rep)
		}
	}
	t.Logf("%d kills; generations seen after a kill: %v", kills, mixedSeen)
	if out, err := childCmd("stage", uri, stageVars(1, "new", true)).CombinedOutput(); err != nil {
		t.Fatalf("re-run: %v: %s", err, out)
	}
	if tags := stageTags(t, lk, 1); strings.Join(tags, ",") != "new,new,new" {
		t.Fatalf("after the re-run: %v", tags)
	}
	after, err := lk.Partitions(ctx, "r1", "turns")
	if err != nil {
		t.Fatal(err)
	}
	sums := func(parts []lake.Partition, step int64) string {
		var out []string
		for _, p := range parts {
			if p.Key.Step == step {
				for _, f := range p.Manifest.Files {
					out = append(out, f.SHA256)
				}
			}
		}
		return strings.Join(out, ",")
	}
	if sums(after, 1) != sums(clean, 2) {
		t.Fatal("the re-run's files differ from a clean run's")
	}
}

func TestConcurrentStageWritersLocal(t *testing.T) { testConcurrentStageWriters(t, localLakes) }

func TestConcurrentStageWritersS3(t *testing.T) {
	_, bucket := s3test.Start(t)
	testConcurrentStageWriters(t, s3Lakes(bucket, true))
}

// testConcurrentStageWriters races two and three unforced writers of one stage and step with different
// rows: exactly one writer's rows are visible in every partition, the others exit with the race message
// (and no --force advice), and verify finds nothing.
func testConcurrentStageWriters(t *testing.T, newLake newLakeFunc) {
	ctx := context.Background()
	lk, uri := newLake(t)
	for _, writers := range []int{2, 3} {
		step := writers
		start := time.Now().Add(300 * time.Millisecond).UnixNano()
		codes := make([]int, writers)
		outs := make([]string, writers)
		var wg sync.WaitGroup
		for w := range writers {
			vars := stageVars(step, fmt.Sprintf("w%02d", w)[:3], false)
			vars["START_AT"] = fmt.Sprint(start)
			cmd := childCmd("stage", uri, vars)
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := cmd.CombinedOutput()
				outs[w] = string(out)
				if ee, ok := err.(*exec.ExitError); ok {
					codes[w] = ee.ExitCode()
				} else if err != nil {
					codes[w] = -1
				}
			}()
		}
		wg.Wait()
		winners := 0
		winner := ""
		for w, code := range codes {
			switch code {
			case childCommitted:
				winners++
				winner = fmt.Sprintf("w%02d", w)[:3]
			case childConcurrent:
				if !strings.Contains(outs[w], "committed step") || strings.Contains(outs[w], "--force") {
					t.Fatalf("loser's message: %s", outs[w])
				}
			default:
				t.Fatalf("writer %d exited %d: %s", w, code, outs[w])
			}
		}
		if winners != 1 {
			t.Fatalf("%d writers: %d committed, want 1 (%v)", writers, winners, codes)
		}
		for _, tag := range stageTags(t, lk, int64(step)) {
			if tag != winner {
				t.Fatalf("%d writers: visible rows of %q, winner %q", writers, tag, winner)
			}
		}
		rep, err := lk.Verify(ctx, "r1", lake.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) > 0 {
			t.Fatalf("%d writers: verify: %+v", writers, rep.Problems)
		}
	}
}
