package duck_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// episodeRowV1 is an episodes row as schema version 1 wrote it (no neutralized_markers).
type episodeRowV1 struct {
	Step      int64  `parquet:"step"`
	EnvID     string `parquet:"env_id"`
	EpisodeID string `parquet:"episode_id"`
}

// A table whose steps were written under two schema versions reads as one view: the older step's files
// lack the new column, which reads NULL there.
func TestViewReadsTwoSchemaVersions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lk := laketest.Open(t, dir)
	laketest.NewRun(t, lk, "r1", config.Default())
	for step := int64(0); step < 2; step++ {
		laketest.Write(t, lk, lake.PartitionKey{Run: "r1", Table: "episodes", Step: step},
			[]schemas.EpisodeRow{{Step: step, EnvID: "e", EpisodeID: "x", EndedBy: schemas.EndedDone, NeutralizedMarkers: 3}})
	}
	rewriteStep0AsV1(t, dir)
	sess, err := duck.OpenRuns(ctx, lk, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var n, nulls, sum int64
	if err := sess.DB.QueryRowContext(ctx, "select count(*), count(*) filter (where neutralized_markers is null), coalesce(sum(neutralized_markers), 0) from episodes").Scan(&n, &nulls, &sum); err != nil {
		t.Fatal(err)
	}
	if n != 2 || nulls != 1 || sum != 3 {
		t.Fatalf("rows %d, NULL counts %d, sum %d; want 2, 1, 3", n, nulls, sum)
	}
}

// rewriteStep0AsV1 rewrites the step-0 episodes part files under dir as schema version 1 wrote them.
func rewriteStep0AsV1(t *testing.T, dir string) {
	t.Helper()
	var parts []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, "episodes") && strings.Contains(p, "step=0") && !strings.Contains(p, "step=00000001") && !strings.Contains(p, "step=1") && strings.HasSuffix(p, ".parquet") {
			parts = append(parts, p)
		}
		return nil
	})
	if len(parts) == 0 {
		var all []string
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { all = append(all, p); return nil })
		t.Fatalf("no step-0 episodes part file under %s: %v", dir, all)
	}
	for _, p := range parts {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := parquet.Write(f, []episodeRowV1{{Step: 0, EnvID: "e", EpisodeID: "x"}}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		recordRewrite(t, p)
	}
}

// recordRewrite updates the commit record of a part file rewritten in place (its manifest entry's size
// and sha256), as the writer of an older lake would have recorded it: every read checks a file against
// its record.
func recordRewrite(t *testing.T, part string) {
	t.Helper()
	body, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	runDir := part[:strings.Index(part, "/episodes/")]
	updated := 0
	filepath.Walk(filepath.Join(runDir, "_commits"), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatal(err)
		}
		for _, p := range rec["partitions"].([]any) {
			for _, f := range p.(map[string]any)["manifest"].(map[string]any)["files"].([]any) {
				if entry := f.(map[string]any); entry["name"] == filepath.Base(part) {
					entry["sha256"], entry["bytes"] = hex.EncodeToString(sum[:]), len(body)
					updated++
				}
			}
		}
		if data, err = json.Marshal(rec); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return nil
	})
	if updated == 0 {
		t.Fatalf("no commit record lists %s", part)
	}
}

// A run whose files all predate a column still has it in its view, as NULL: a model naming the column
// (left_out.sql names train_metrics' version 2 counts) runs on a run written before it.
func TestViewOfOlderFilesHasTheCurrentColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lk := laketest.Open(t, dir)
	laketest.NewRun(t, lk, "r1", config.Default())
	laketest.Write(t, lk, lake.PartitionKey{Run: "r1", Table: "episodes", Step: 0},
		[]schemas.EpisodeRow{{Step: 0, EnvID: "e", EpisodeID: "x", EndedBy: schemas.EndedDone, NeutralizedMarkers: 3}})
	rewriteStep0AsV1(t, dir)
	sess, err := duck.OpenRuns(ctx, lk, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var n, nulls int64
	if err := sess.DB.QueryRowContext(ctx, "select count(*), count(*) filter (where neutralized_markers is null) from episodes").Scan(&n, &nulls); err != nil {
		t.Fatal(err)
	}
	if n != 1 || nulls != 1 {
		t.Fatalf("rows %d, NULL counts %d; want 1, 1", n, nulls)
	}
}
