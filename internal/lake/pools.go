package lake

import "context"

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
