package duck_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

func turns(step int64, n int) []schemas.TurnRow {
	rows := make([]schemas.TurnRow, n)
	for i := range rows {
		rows[i] = schemas.TurnRow{Step: step, EpisodeID: fmt.Sprintf("ep-%d-%06d", step, i/25), EnvID: "env", Turn: int32(i % 25),
			Observation: fmt.Sprintf("observation %d of step %d", i, step), Action: "up", Reward: float64(i%4) / 4, Info: "{}"}
	}
	return rows
}

// seedS3Run creates run r1 on an S3 lake with `steps` turns partitions of n rows and a corpus.
func seedS3Run(tb testing.TB, steps, n int) string {
	_, bucket := s3test.Start(tb)
	uri := "s3://" + bucket + "/lake"
	lk := laketest.Open(tb, uri)
	laketest.NewRun(tb, lk, "r1", config.Default())
	for step := 0; step < steps; step++ {
		laketest.Write(tb, lk, lake.PartitionKey{Run: "r1", Table: "turns", Step: int64(step)}, turns(int64(step), n))
	}
	docs := []schemas.CorpusRow{{DocID: "d1", Text: "one"}, {DocID: "d2", Text: "two"}}
	laketest.Write(tb, lk, lake.CorpusKey("default"), docs)
	return uri
}

// query opens a session the way one `spade query` process does (a fresh Lake, the shared cache
// directory) and returns its answer and the bytes it downloaded.
func query(tb testing.TB, uri, cacheDir string) (string, int64) {
	ctx := context.Background()
	store := laketest.Open(tb, uri)
	lk := lake.New(store.Store(), lake.NewCache(cacheDir))
	sess, err := duck.OpenRuns(ctx, lk, "r1")
	if err != nil {
		tb.Fatal(err)
	}
	defer sess.Close()
	var n, docs int64
	var avg float64
	if err := sess.DB.QueryRowContext(ctx, "select count(*), avg(reward), (select count(*) from corpus) from turns").Scan(&n, &avg, &docs); err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("%d %.4f %d", n, avg, docs), lk.Cache().BytesDownloaded()
}

// TestS3SecondQueryDownloadsNothing checks the content-addressed cache: the first query of an S3 run
// downloads its parts, the second (a new process, same cache directory) downloads 0 bytes.
func TestS3SecondQueryDownloadsNothing(t *testing.T) {
	uri := seedS3Run(t, 3, 2000)
	cacheDir := t.TempDir()
	first, downloaded := query(t, uri, cacheDir)
	if first != "6000 0.3750 2" {
		t.Fatalf("first query answered %q", first)
	}
	if downloaded == 0 {
		t.Fatal("the first query of an S3 run downloaded nothing")
	}
	second, again := query(t, uri, cacheDir)
	if second != first {
		t.Fatalf("second query answered %q, first %q", second, first)
	}
	if again != 0 {
		t.Fatalf("the second query downloaded %d bytes, want 0", again)
	}
}

// BenchmarkS3Query times a first (downloading) and a second (cached) query of an S3 run of 1,000,000 turns
// rows and reports the bytes the second one downloaded (0 expected).
func BenchmarkS3Query(b *testing.B) {
	uri := seedS3Run(b, 2, 500_000)
	b.ResetTimer()
	var firstT, secondT time.Duration
	var secondBytes int64
	for i := 0; i < b.N; i++ {
		cacheDir := b.TempDir()
		start := time.Now()
		query(b, uri, cacheDir)
		firstT += time.Since(start)
		start = time.Now()
		_, n := query(b, uri, cacheDir)
		secondT += time.Since(start)
		secondBytes += n
	}
	b.ReportMetric(float64(firstT.Milliseconds())/float64(b.N), "first-ms")
	b.ReportMetric(float64(secondT.Milliseconds())/float64(b.N), "second-ms")
	b.ReportMetric(float64(secondBytes)/float64(b.N), "second-bytes")
}
