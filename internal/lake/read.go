package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// ReadRows reads every row of a committed partition, verifying each file's sha256 against the manifest.
// It returns ErrNotCommitted when nothing commits the partition. When a forced rewrite replaces the
// partition while it is being read (its old parts vanish), it reads the new manifest and starts over, so
// the rows are those of one generation, never a mix.
func ReadRows[T any](ctx context.Context, lk *Lake, key PartitionKey) ([]T, error) {
	for attempt := 0; ; attempt++ {
		m, err := lk.Manifest(ctx, key)
		if err != nil {
			return nil, err
		}
		rows, err := readManifest[T](ctx, lk, key, m)
		if errors.Is(err, ErrNotFound) && attempt < 8 {
			if now, merr := lk.Manifest(ctx, key); merr == nil && now.Generation != m.Generation {
				continue
			}
		}
		return rows, err
	}
}

func readManifest[T any](ctx context.Context, lk *Lake, key PartitionKey, m *Manifest) ([]T, error) {
	var rows []T
	for _, f := range m.Files {
		body, err := lk.readVerified(ctx, key, f)
		if err != nil {
			return nil, err
		}
		part, err := DecodeParquet[T](body)
		if err != nil {
			return nil, fmt.Errorf("lake: %s/%s: %w", key, f.Name, err)
		}
		rows = append(rows, part...)
	}
	return rows, nil
}

// ReadStep reads every row of one step of a run's table: its plain partition and every committed
// fragment, in that order (fragments by name). It returns ErrNotCommitted when the step has neither.
func ReadStep[T any](ctx context.Context, lk *Lake, run, table string, step int64) ([]T, error) {
	parts, err := lk.StepPartitions(ctx, run, table, step)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotCommitted, PartitionKey{Run: run, Table: table, Step: step})
	}
	return readPartitions[T](ctx, lk, parts)
}

// ReadTable reads every committed partition of a run's table, fragments included, in step order.
func ReadTable[T any](ctx context.Context, lk *Lake, run, table string) ([]T, error) {
	parts, err := lk.Partitions(ctx, run, table)
	if err != nil {
		return nil, err
	}
	return readPartitions[T](ctx, lk, parts)
}

// readPartitions reads the rows of every partition of parts (ReadRows), in the order given.
func readPartitions[T any](ctx context.Context, lk *Lake, parts []Partition) ([]T, error) {
	var rows []T
	for _, p := range parts {
		part, err := ReadRows[T](ctx, lk, p.Key)
		if err != nil {
			return nil, err
		}
		rows = append(rows, part...)
	}
	return rows, nil
}

// readVerified returns a part file's bytes, from the cache when it holds them, checking the sha256.
func (l *Lake) readVerified(ctx context.Context, part PartitionKey, f FileEntry) ([]byte, error) {
	key := part.Dir() + "/" + f.Name
	if _, local := l.store.(LocalPather); !local {
		path, err := l.cache.Fetch(ctx, l.store, key, f)
		if err != nil {
			return nil, err
		}
		body, err := readFile(path)
		if err != nil {
			return nil, err
		}
		return body, l.checkBody(part, key, body, f) // the cached copy, as read now
	}
	body, err := ReadAll(ctx, l.store, key)
	if err != nil {
		return nil, err
	}
	if err := l.checkBody(part, key, body, f); err != nil {
		return nil, err
	}
	return body, nil
}

// verify checks a downloaded body against its record (the cache fetches again on an error).
func verify(key string, body []byte, f FileEntry) error {
	if detail := bodyMismatch(body, f); detail != "" {
		return fmt.Errorf("lake: %s: %s: the download is corrupt", key, detail)
	}
	return nil
}

// DecodeParquet decodes a whole Parquet file into rows.
func DecodeParquet[T any](body []byte) ([]T, error) {
	r := parquet.NewGenericReader[T](bytes.NewReader(body))
	defer r.Close()
	rows := make([]T, r.NumRows())
	n, err := r.Read(rows)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return rows[:n], nil
}
