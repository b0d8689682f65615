package lake

import (
	"context"
	"sort"
	"strings"
)

// PoolsTable is the table of an imported static pool of env programs (schemas.PoolsSpec), stored like a
// corpus: one partition per pool name, outside every run (pools/<name>/pools/step=000000/).
const PoolsTable = "pools"

// PoolKey is the partition key of the imported env pool `name` (`spade pool import`, sample.pool).
func PoolKey(name string) PartitionKey { return PartitionKey{Corpus: name, Table: PoolsTable} }

// PoolFiles returns local paths of an imported pool's part files (for DuckDB's read_parquet).
func (l *Lake) PoolFiles(ctx context.Context, name string) ([]string, error) {
	key := PoolKey(name)
	m, err := l.Manifest(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.partitionFiles(ctx, []Partition{{Key: key, Manifest: m}})
}

// Pools lists the names of the imported env pools, sorted.
func (l *Lake) Pools(ctx context.Context) ([]string, error) {
	objs, err := l.store.List(ctx, poolsPrefix)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		name, _, _ := strings.Cut(strings.TrimPrefix(o.Key, poolsPrefix), "/")
		if o.Key == PoolKey(name).stepDir()+"/_manifest.json" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}
