package lake

import (
	"context"
	"sort"
	"strings"
)

// benchTable is the table a benchmark's items are stored in (schemas.BenchItemsSpec).
const benchTable = "bench_items"

// BenchKey is the partition key of an imported benchmark's items: like a corpus, a benchmark belongs to
// no run, and lives at corpora/<name>/bench_items/step=000000 (every path rule stays in paths.go).
func BenchKey(name string) PartitionKey { return PartitionKey{Corpus: name, Table: benchTable} }

// BenchFiles returns local paths of a benchmark's part files.
func (l *Lake) BenchFiles(ctx context.Context, name string) ([]string, error) {
	key := BenchKey(name)
	m, err := l.Manifest(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.partitionFiles(ctx, []Partition{{Key: key, Manifest: m}})
}

// Benches lists the imported benchmarks, sorted.
func (l *Lake) Benches(ctx context.Context) ([]string, error) {
	objs, err := l.store.List(ctx, corporaPrefix)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		name, rest, _ := strings.Cut(strings.TrimPrefix(o.Key, corporaPrefix), "/")
		if rest == BenchKey(name).stepDir()[len(corporaPrefix)+len(name)+1:]+"/_manifest.json" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}
