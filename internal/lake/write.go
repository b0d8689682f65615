package lake

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/spadekit/spade/schemas"
)

// WriteOptions controls a partition write.
type WriteOptions struct {
	// Shard and Shards split a partition between independent writers (Shards 0 means 1). The partition
	// commits when the last shard is in.
	Shard, Shards int
	// Force replaces a committed partition atomically (only with Shards <= 1).
	Force bool
	// ReplaceShard makes a re-run shard writer replace its own shard of a committed partition: the new
	// generation lists this writer's new parts and the other shards' parts of the committed generation
	// (so a shard killed after its partition committed can be re-run without touching its siblings'
	// rows). The partition must have been committed with the same Shards. With Shards <= 1 it is Force.
	// On a partition that is not committed it is an ordinary shard write (which replaces the parts of an
	// earlier, killed writer of the same shard).
	ReplaceShard bool
	// ChunkRows bounds the rows per part file; 0 means DefaultChunkRows. Chunks are encoded in parallel.
	ChunkRows int
	// SkipValidation skips per-row validation (for trusted, already validated rows in benchmarks).
	SkipValidation bool
}

// DefaultChunkRows is the default number of rows per part file.
const DefaultChunkRows = 250_000

// WriteResult reports what a write did.
type WriteResult struct {
	// Committed is true when this call committed the partition (false for a non-final shard).
	Committed bool
	// Rows and Bytes count what this writer uploaded.
	Rows, Bytes int64
	// Generation is the partition generation written: 0 for a first commit, +1 per forced rewrite.
	Generation int
}

// WriteRows validates rows, encodes them as zstd Parquet part files, uploads them and commits the
// partition (or this writer's shard of it). Inside a stage's transaction (WithTxn, opened by
// stage.Execute) a write of the transaction's run and step only uploads: it becomes visible when the
// transaction commits, with everything else the stage wrote there, and never returns ErrCommitted. It returns ErrCommitted when the partition is committed and
// opts.Force is false, and ErrConcurrentWriter when another writer committed it first. An empty rows
// slice commits an empty partition (a manifest with no files), which is how a stage records "ran, found
// nothing".
func WriteRows[T schemas.Row](ctx context.Context, lk *Lake, key PartitionKey, rows []T, opts WriteOptions) (WriteResult, error) {
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
	if opts.Force && shards > 1 {
		return WriteResult{}, fmt.Errorf("lake: --force replaces a whole partition and needs --shards 1")
	}
	if !opts.SkipValidation {
		for i, r := range rows {
			if err := r.Validate(); err != nil {
				return WriteResult{}, fmt.Errorf("lake: %s row %d: %w", key, i, err)
			}
		}
	}
	if tx := txnFrom(ctx); tx != nil && tx.covers(key) {
		// Inside a stage: the write joins the stage's transaction and becomes visible with its record.
		return txnWrite(ctx, tx, key, spec.Version, rows, opts)
	}
	if opts.ReplaceShard && shards <= 1 {
		opts.Force = true
	}
	current, err := lk.Manifest(ctx, key)
	if err == nil && opts.ReplaceShard && shards > 1 {
		return replaceShard(ctx, lk, key, spec, rows, opts, current)
	}
	generation := 0
	switch {
	case err == nil && !opts.Force:
		return WriteResult{}, fmt.Errorf("%w: %s (use --force to replace it)", ErrCommitted, key)
	case err == nil:
		generation = current.Generation + 1
	case !errors.Is(err, ErrNotCommitted):
		return WriteResult{}, err
	}
	// A forced write of a partition that is not committed yet is an ordinary first commit.
	writer := newWriterID()
	files, err := encodeAndUpload(ctx, lk.store, key, generation, rows, opts, writer)
	if err != nil {
		return WriteResult{}, err
	}
	res := WriteResult{Generation: generation}
	for _, f := range files {
		res.Rows += f.Rows
		res.Bytes += f.Bytes
	}
	marker := shardMarker{Shard: opts.Shard, Shards: shards, Writer: writer, Files: files}
	body, _ := json.Marshal(marker)
	if err := lk.store.Put(ctx, key.shardMarkerKey(generation, opts.Shard, shards), body); err != nil {
		return res, err
	}
	committed, err := commit(ctx, lk, key, spec, generation, marker, opts.Force && generation > 0)
	res.Committed = committed
	if err == nil && !committed && opts.ReplaceShard && shards > 1 {
		// A sibling may have committed the partition from this shard's previous marker (a killed writer's)
		// before this writer's marker landed: then this writer replaces its shard in the committed one.
		if m, merr := lk.Manifest(ctx, key); merr == nil && !references(m, files) && len(files) > 0 {
			return replaceShard(ctx, lk, key, spec, rows, opts, m)
		}
	}
	return res, err
}

// replaceShard commits a new generation of a committed sharded partition in which this writer's shard
// holds rows and every other shard keeps its committed parts. Of two writers replacing shards of one
// generation one wins the claim; the other starts over from the winner's manifest (up to eight times).
func replaceShard[T schemas.Row](ctx context.Context, lk *Lake, key PartitionKey, spec schemas.Spec, rows []T, opts WriteOptions, current *Manifest) (WriteResult, error) {
	shards := max(opts.Shards, 1)
	var lastErr error
	for attempt := 0; attempt < 8; attempt++ {
		if attempt > 0 {
			m, err := lk.Manifest(ctx, key)
			if err != nil {
				return WriteResult{}, err
			}
			current = m
		}
		if current.Shards != shards {
			return WriteResult{}, fmt.Errorf("lake: %s was committed by %d shard writer(s), not %d: re-run it with --shards %d, or replace it whole with --force --shards 1",
				key, current.Shards, shards, current.Shards)
		}
		generation := current.Generation + 1
		writer := newWriterID()
		files, err := encodeAndUpload(ctx, lk.store, key, generation, rows, opts, writer)
		if err != nil {
			return WriteResult{}, err
		}
		res := WriteResult{Generation: generation}
		man := Manifest{Table: key.Table, Run: key.Run, Step: key.Step, SchemaVersion: spec.Version,
			Generation: generation, Shards: shards, Files: []FileEntry{}, Writer: writerLabel(writer),
			CommittedAt: time.Now().UTC().Format(time.RFC3339Nano)}
		for _, f := range current.Files {
			if s, ok := partShard(f.Name); ok && s == opts.Shard {
				continue
			}
			man.Files = append(man.Files, f)
		}
		for _, f := range files {
			man.Files = append(man.Files, f)
			res.Rows += f.Rows
			res.Bytes += f.Bytes
		}
		sort.Slice(man.Files, func(i, j int) bool { return man.Files[i].Name < man.Files[j].Name })
		for _, f := range man.Files {
			man.Rows += f.Rows
			man.Bytes += f.Bytes
		}
		body, _ := json.MarshalIndent(man, "", "  ")
		committed, err := commitForced(ctx, lk, key, &man, body, files)
		if err == nil {
			res.Committed = committed
			return res, nil
		}
		if !errors.Is(err, ErrConcurrentWriter) {
			return res, err
		}
		lastErr = err
	}
	return WriteResult{}, lastErr
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

// commit writes the manifest once every shard's marker is present. It returns whether this writer
// committed. This writer's own shard always contributes its own files, never what the stored marker
// says: a concurrent writer of the same shard may have overwritten the marker, and a manifest listing
// that writer's files must not be committed in this writer's name.
func commit(ctx context.Context, lk *Lake, key PartitionKey, spec schemas.Spec, generation int, own shardMarker, force bool) (bool, error) {
	shards, writer, mine := own.Shards, own.Writer, own.Files
	objs, err := lk.store.List(ctx, key.shardDir(generation))
	if err != nil {
		return false, err
	}
	markers := map[int]shardMarker{}
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, shardMarkerSuffix(shards)) {
			continue
		}
		body, err := ReadAll(ctx, lk.store, o.Key)
		if err != nil {
			return false, err
		}
		var m shardMarker
		if err := json.Unmarshal(body, &m); err != nil {
			return false, fmt.Errorf("lake: corrupt shard marker %s: %v", o.Key, err)
		}
		markers[m.Shard] = m
	}
	markers[own.Shard] = own
	if len(markers) < shards {
		return false, nil // another shard will commit
	}
	man := Manifest{Table: key.Table, Run: key.Run, Corpus: key.Corpus, Step: key.Step, SchemaVersion: spec.Version,
		Generation: generation, Shards: shards, Files: []FileEntry{}, Writer: writerLabel(writer),
		CommittedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	for s := 0; s < shards; s++ {
		for _, f := range markers[s].Files {
			man.Files = append(man.Files, f)
			man.Rows += f.Rows
			man.Bytes += f.Bytes
		}
	}
	sort.Slice(man.Files, func(i, j int) bool { return man.Files[i].Name < man.Files[j].Name })
	body, _ := json.MarshalIndent(man, "", "  ")
	if force {
		return commitForced(ctx, lk, key, &man, body, mine)
	}
	err = lk.store.PutIfAbsent(ctx, key.ManifestKey(), body)
	if errors.Is(err, ErrExists) {
		winner, merr := lk.Manifest(ctx, key)
		if merr != nil {
			return false, merr
		}
		if shards > 1 && winner.Generation == generation && winner.Shards == shards {
			return false, nil // a sibling shard committed the same markers
		}
		return false, lostCommit(ctx, lk, key, winner, mine)
	}
	if err != nil {
		return false, err
	}
	lk.removeUnreferenced(ctx, key, &man)
	return true, nil
}

// commitForced commits a new generation of a committed partition: it claims the generation with a
// conditional put (so of two forced writers exactly one commits it) and then replaces the manifest with
// one atomic put. A claim whose manifest was never written (the claimant was killed between the two puts)
// is rolled forward by the next forced writer, which then reports that it lost.
func commitForced(ctx context.Context, lk *Lake, key PartitionKey, man *Manifest, body []byte, mine []FileEntry) (bool, error) {
	claim := key.commitClaimKey(man.Generation)
	err := lk.store.PutIfAbsent(ctx, claim, body)
	if errors.Is(err, ErrExists) {
		claimed, rerr := ReadAll(ctx, lk.store, claim)
		if rerr != nil {
			return false, rerr
		}
		winner, derr := decodeManifest(claim, claimed)
		if derr != nil {
			return false, derr
		}
		if !lk.awaitGeneration(ctx, key, winner.Generation, claimantGrace) {
			// The claimant did not put its manifest in time: it was most likely killed between its
			// two puts. Roll its generation forward.
			if err := lk.store.Put(ctx, key.ManifestKey(), claimed); err != nil {
				return false, err
			}
		}
		return false, lostCommit(ctx, lk, key, winner, mine)
	}
	if err != nil {
		return false, err
	}
	if err := lk.store.Put(ctx, key.ManifestKey(), body); err != nil {
		return false, err
	}
	lk.restoreNewestClaim(ctx, key, man.Generation)
	lk.removeUnreferenced(ctx, key, man)
	return true, nil
}

// claimantGrace is how long a forced writer that lost a claim waits for the claimant's manifest before it
// rolls the claim forward itself: the claimant's next step is one small put.
const claimantGrace = 3 * time.Second

// awaitGeneration waits up to grace for the partition's manifest to reach generation gen; it reports
// whether it did.
func (l *Lake) awaitGeneration(ctx context.Context, key PartitionKey, gen int, grace time.Duration) bool {
	deadline := time.Now().Add(grace)
	for {
		if m, err := l.legacyManifest(ctx, key); err == nil && m.Generation >= gen {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restoreNewestClaim repairs the one order a plain put cannot prevent: a claimant whose manifest put was
// slow enough that a loser rolled its claim forward and a later generation committed before the slow put
// landed, putting an older manifest back over the newer. After its own put, a forced writer looks for
// claims of later generations and, if there are any, puts the newest one's manifest back.
func (l *Lake) restoreNewestClaim(ctx context.Context, key PartitionKey, gen int) {
	var newest []byte
	for g := gen + 1; ; g++ {
		body, err := ReadAll(ctx, l.store, key.commitClaimKey(g))
		if err != nil {
			break
		}
		newest = body
	}
	if newest != nil {
		l.store.Put(ctx, key.ManifestKey(), newest)
	}
}

// lostCommit removes the loser's own parts (unless the winner lists them) and returns ErrConcurrentWriter.
func lostCommit(ctx context.Context, lk *Lake, key PartitionKey, winner *Manifest, mine []FileEntry) error {
	if !references(winner, mine) {
		for _, f := range mine {
			lk.store.Delete(ctx, key.Dir()+"/"+f.Name)
		}
	}
	return fmt.Errorf("%w: %s was committed by %s at %s while this writer was writing it; nothing of this writer was committed, and its parts are removed",
		ErrConcurrentWriter, key, winner.Writer, winner.CommittedAt)
}

func references(m *Manifest, files []FileEntry) bool {
	for _, f := range files {
		for _, g := range m.Files {
			if f.Name == g.Name {
				return true
			}
		}
	}
	return false
}

// removeUnreferenced deletes part files of the partition's generation m.Generation or older that the
// manifest does not list (the parts of killed writers and of replaced generations). Parts of newer
// generations belong to forced writers still uploading and are left alone. Failures are ignored: garbage
// is invisible to readers.
func (l *Lake) removeUnreferenced(ctx context.Context, key PartitionKey, m *Manifest) {
	keep := map[string]bool{}
	for _, f := range m.Files {
		keep[f.Name] = true
	}
	objs, err := l.store.List(ctx, key.Dir()+"/part-")
	if err != nil {
		return
	}
	for _, o := range objs {
		gen, ok := partGeneration(o.Key)
		if ok && gen <= m.Generation && !keep[o.Key[strings.LastIndex(o.Key, "/")+1:]] {
			l.store.Delete(ctx, o.Key)
		}
	}
}

func writerLabel(writer string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("spade writer %s on %s pid %d", writer, host, os.Getpid())
}
