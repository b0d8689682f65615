package lake

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/spadekit/spade/schemas"
)

// WriteOptions controls one write into a transaction.
type WriteOptions struct {
	// Shard and Shards split a partition between the shard processes of one transaction (Shards 0 means
	// 1): each writes its own shard, and the record lists them all.
	Shard, Shards int
	// ChunkRows bounds the rows per part file; 0 means DefaultChunkRows. Chunks are encoded in parallel.
	ChunkRows int
	// SkipValidation skips per-row validation (for trusted, already validated rows in benchmarks).
	SkipValidation bool
}

// DefaultChunkRows is the default number of rows per part file.
const DefaultChunkRows = 250_000

// WriteResult reports what a write did.
type WriteResult struct {
	// Committed is true when every shard process of the transaction has written (always for an unsharded
	// one): the process that sees it last commits the transaction and may act on the whole step.
	Committed bool
	// Rows and Bytes count what this writer uploaded.
	Rows, Bytes int64
	// Generation is the generation written: 0 for a first commit, +1 per forced rewrite.
	Generation int
}

// WriteRows validates rows, encodes them as zstd Parquet part files and uploads them as key's partition
// (or this writer's shard of it) inside tx. Nothing is visible until tx commits, and then everything tx
// wrote is. key must lie in tx's scope (its run and step, or its corpus). An empty rows slice writes an
// empty partition, which is how a stage records "ran, found nothing". A second write of the same
// partition and shard in one transaction replaces the first.
func WriteRows[T schemas.Row](ctx context.Context, tx *Txn, key PartitionKey, rows []T, opts WriteOptions) (WriteResult, error) {
	spec, ok := schemas.Lookup(key.Table)
	if !ok {
		return WriteResult{}, fmt.Errorf("lake: unknown table %q", key.Table)
	}
	switch {
	case spec.PerRun && key.Corpus == "":
		if err := ValidName(key.Run); err != nil {
			return WriteResult{}, fmt.Errorf("lake: run: %w", err)
		}
	case !spec.PerRun && key.Run == "":
		if err := ValidName(key.Corpus); err != nil {
			return WriteResult{}, fmt.Errorf("lake: corpus: %w", err)
		}
	case spec.PerRun:
		return WriteResult{}, fmt.Errorf("lake: table %s belongs to a run: set the key's Run, not Corpus", key.Table)
	default:
		return WriteResult{}, fmt.Errorf("lake: table %s belongs to a corpus: set the key's Corpus, not Run", key.Table)
	}
	if key.Fragment != "" {
		if err := ValidFragment(key.Fragment); err != nil {
			return WriteResult{}, fmt.Errorf("lake: %w", err)
		}
		if key.Corpus != "" {
			return WriteResult{}, fmt.Errorf("lake: a corpus has no fragments")
		}
	}
	shards := max(opts.Shards, 1)
	if opts.Shard < 0 || opts.Shard >= shards {
		return WriteResult{}, fmt.Errorf("lake: shard %d out of range 0..%d", opts.Shard, shards-1)
	}
	if err := checkRowType(spec, rows); err != nil {
		return WriteResult{}, fmt.Errorf("lake: %s: %w", key, err)
	}
	if tx == nil {
		return WriteResult{}, fmt.Errorf("lake: %s written without a transaction (a stage writes into env.Txn, which stage.Execute or stage.Within opens)", key)
	}
	if !tx.covers(key) {
		return WriteResult{}, fmt.Errorf("lake: %s lies outside the transaction of %s", key, tx.scope())
	}
	if !opts.SkipValidation {
		for i, r := range rows {
			if err := r.Validate(); err != nil {
				return WriteResult{}, fmt.Errorf("lake: %s row %d: %w", key, i, err)
			}
		}
	}
	return txnWrite(ctx, tx, key, spec.Version, rows, opts)
}

// CommitRows is the whole transaction of a writer outside any stage that commits one partition (an
// import, a synthetic run's table, a test's rows): unless spec.Force, a partition already committed is
// ErrCommitted; otherwise it opens a transaction of spec, writes rows as key and commits them, or aborts
// and returns the error. The result's Committed says whether this call made the rows visible (false for
// a shard process that was not the last one in).
func CommitRows[T schemas.Row](ctx context.Context, lk *Lake, spec TxnSpec, key PartitionKey, rows []T, opts WriteOptions) (WriteResult, error) {
	if !spec.Force && key.Corpus == "" {
		_, err := lk.Manifest(ctx, key)
		switch {
		case err == nil:
			return WriteResult{}, fmt.Errorf("%w: %s (use --force to replace it)", ErrCommitted, key)
		case !errors.Is(err, ErrNotCommitted):
			return WriteResult{}, err
		}
	}
	tx := lk.Begin(spec)
	res, err := WriteRows(ctx, tx, key, rows, opts)
	if err != nil {
		tx.Abort(context.WithoutCancel(ctx))
		return res, err
	}
	res.Committed, err = tx.Commit(context.WithoutCancel(ctx))
	return res, err
}

// checkRowType refuses rows of another table's type (a programming error that would otherwise commit
// the wrong columns under the table's name).
func checkRowType[T schemas.Row](spec schemas.Spec, rows []T) error {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Interface {
		if t != spec.RowType() {
			return fmt.Errorf("table %s holds %v rows, not %v", spec.Name, spec.RowType(), t)
		}
		return nil
	}
	for i, r := range rows {
		if got := reflect.TypeOf(r); got != spec.RowType() {
			return fmt.Errorf("table %s holds %v rows, row %d is %v", spec.Name, spec.RowType(), i, got)
		}
	}
	return nil
}

func newWriterID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// encodeAndUpload encodes rows in chunks (in parallel) and uploads each part.
func encodeAndUpload[T any](ctx context.Context, store Store, key PartitionKey, generation int, rows []T, opts WriteOptions, writer string) ([]FileEntry, error) {
	chunk := opts.ChunkRows
	if chunk <= 0 {
		chunk = DefaultChunkRows
	}
	n := (len(rows) + chunk - 1) / chunk
	var schema *parquet.Schema
	if spec, ok := schemas.Lookup(key.Table); ok && reflect.TypeFor[T]().Kind() == reflect.Interface {
		schema = spec.ParquetSchema() // rows held as []schemas.Row: the table names their type
	}
	files := make([]FileEntry, n)
	errs := make([]error, n)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			part := rows[i*chunk : min((i+1)*chunk, len(rows))]
			body, err := encodeParquet(part, schema)
			if err != nil {
				errs[i] = fmt.Errorf("lake: encode %s: %w", key, err)
				return
			}
			sum := sha256.Sum256(body)
			name := key.partKey(generation, opts.Shard, writer, i)
			if err := store.Put(ctx, name, body); err != nil {
				errs[i] = err
				return
			}
			files[i] = FileEntry{Name: name[strings.LastIndex(name, "/")+1:], Rows: int64(len(part)), Bytes: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return files, nil
}

// EncodeParquet encodes rows as one zstd-compressed Parquet file. The bytes depend only on the rows, so a
// re-run of a stage writes identical files (and checksums).
func EncodeParquet[T any](rows []T) ([]byte, error) { return encodeParquet(rows, nil) }

// encodeParquet encodes rows with the schema of T, or with schema when T is an interface type.
func encodeParquet[T any](rows []T, schema *parquet.Schema) ([]byte, error) {
	var buf bytes.Buffer
	opts := []parquet.WriterOption{parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest})}
	if schema != nil {
		opts = append(opts, schema)
	}
	w := parquet.NewGenericWriter[T](&buf, opts...)
	if len(rows) > 0 {
		if _, err := w.Write(rows); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writerLabel(writer string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("spade writer %s on %s pid %d", writer, host, os.Getpid())
}
