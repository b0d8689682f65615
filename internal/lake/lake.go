package lake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/config"
)

// ErrCommitted is returned when an import replaces a committed corpus partition without Force.
var ErrCommitted = errors.New("lake: partition already committed")

// ErrNotCommitted is returned when reading a partition that no commit covers.
var ErrNotCommitted = errors.New("lake: partition not committed")

// ErrConcurrentWriter is returned to a writer that lost a commit to another writer.
var ErrConcurrentWriter = errors.New("lake: another writer committed this partition first")

// ErrRunExists is returned by CreateRun for an existing run.
var ErrRunExists = errors.New("lake: run already exists")

// ErrNoRun is returned when a run has no run.json.
var ErrNoRun = errors.New("lake: no such run")

// Lake is a store plus the commit protocol and a local cache for reading.
type Lake struct {
	store      Store
	cache      *Cache
	records    recordCache
	repairHint func(PartitionKey) string // SetRepairHint
}

// Open opens the lake at uri: "s3://bucket/prefix" or a local directory (created if missing), and
// checks its layout (layout.go): a lake written in layout 1 gives ErrOldLayout with the upgrade command.
func Open(ctx context.Context, uri string) (*Lake, error) {
	l, err := OpenForUpgrade(ctx, uri)
	if err != nil {
		return nil, err
	}
	if err := l.checkLayout(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// OpenForUpgrade opens the lake at uri like Open, without the layout check, for Upgrade.
func OpenForUpgrade(ctx context.Context, uri string) (*Lake, error) {
	var (
		store Store
		err   error
	)
	if strings.HasPrefix(uri, "s3://") {
		store, err = OpenS3(ctx, uri)
		if err == nil {
			store = WithRetry(store, DefaultRetry)
		}
	} else {
		store, err = NewLocal(uri)
	}
	if err != nil {
		return nil, err
	}
	return New(store, nil), nil
}

// New wraps a store in a Lake. A nil cache means the default cache directory (DefaultCacheDir).
func New(store Store, cache *Cache) *Lake {
	if cache == nil {
		cache = NewCache(DefaultCacheDir())
	}
	return &Lake{store: store, cache: cache}
}

// Store returns the underlying store.
func (l *Lake) Store() Store { return l.store }

// Cache returns the lake's read cache.
func (l *Lake) Cache() *Cache { return l.cache }

// URI returns the lake's location.
func (l *Lake) URI() string { return l.store.URI() }

// DefaultCacheDir is $SPADE_CACHE, else the user cache directory's spade/parts, else a temp directory.
func DefaultCacheDir() string {
	if d := os.Getenv("SPADE_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "spade", "parts")
	}
	return filepath.Join(os.TempDir(), "spade-cache")
}

// CreateRun writes a new run's run.json; ErrRunExists if the run exists.
func (l *Lake) CreateRun(ctx context.Context, run string, cfg *config.Config) error {
	if err := ValidName(run); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := l.store.PutIfAbsent(ctx, runConfigKey(run), cfg.JSON()); err != nil {
		if errors.Is(err, ErrExists) {
			return fmt.Errorf("%w: %s (a changed setting is a new run: pick another --run)", ErrRunExists, run)
		}
		return err
	}
	return nil
}

// RunConfig reads a run's configuration; ErrNoRun if the run does not exist.
func (l *Lake) RunConfig(ctx context.Context, run string) (*config.Config, error) {
	body, err := ReadAll(ctx, l.store, runConfigKey(run))
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: %q in %s (create it with `%s`)", ErrNoRun, run, l.URI(), l.Command("init", "--run", run))
	}
	if err != nil {
		return nil, err
	}
	return config.Parse(body)
}

// Runs lists the runs of the lake, sorted.
func (l *Lake) Runs(ctx context.Context) ([]string, error) {
	objs, err := l.store.List(ctx, runsPrefix)
	if err != nil {
		return nil, err
	}
	var runs []string
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, runsPrefix)
		if run, file, ok := strings.Cut(rest, "/"); ok && file == "run.json" {
			runs = append(runs, run)
		}
	}
	return runs, nil
}

// Corpora lists the imported corpora, sorted: the names under corpora/ with a committed corpus table
// (benchmarks live beside them with a bench_items table, and are not corpora).
func (l *Lake) Corpora(ctx context.Context) ([]string, error) {
	objs, err := l.store.List(ctx, corporaPrefix)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		name, _, _ := strings.Cut(strings.TrimPrefix(o.Key, corporaPrefix), "/")
		if o.Key == CorpusKey(name).stepDir()+"/_manifest.json" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Partition is a committed partition: its key and manifest.
type Partition struct {
	Key      PartitionKey
	Manifest *Manifest
}

// Partitions lists the committed partitions of a run (every table when table is empty), fragments
// included, sorted by table, step, then fragment (the plain partition of a step first): the partitions
// the newest commit records list, the higher partition generation winning where two records list one.
func (l *Lake) Partitions(ctx context.Context, run, table string) ([]Partition, error) {
	return l.partitionsUnder(ctx, run, table, -1)
}

// StepPartitions lists the committed partitions of one step of a run's table: the plain partition (when
// committed) and every committed fragment, sorted by fragment name (the plain partition first).
func (l *Lake) StepPartitions(ctx context.Context, run, table string, step int64) ([]Partition, error) {
	return l.partitionsUnder(ctx, run, table, step)
}

// partitionsUnder lists the committed partitions of a run's table (every table when table is empty) at
// step (every step when step < 0): one listing of the commits and one read per record not yet cached.
func (l *Lake) partitionsUnder(ctx context.Context, run, table string, step int64) ([]Partition, error) {
	recs, err := l.committedRecords(ctx, run, step)
	if err != nil {
		return nil, err
	}
	byKey := recordPartitions(recs, table)
	out := make([]Partition, 0, len(byKey))
	for key, m := range byKey {
		out = append(out, Partition{Key: key, Manifest: m})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return a.Fragment < b.Fragment
	})
	return out, nil
}

// Steps lists the committed steps of one table of a run, ascending: the steps with a committed plain
// partition or at least one committed fragment.
func (l *Lake) Steps(ctx context.Context, run, table string) ([]int64, error) {
	parts, err := l.Partitions(ctx, run, table)
	if err != nil {
		return nil, err
	}
	var steps []int64
	for _, p := range parts {
		if n := len(steps); n == 0 || steps[n-1] != p.Key.Step {
			steps = append(steps, p.Key.Step)
		}
	}
	return steps, nil
}

// Drop removes a partition (or a fragment): first from what commits it (a new generation of the record
// that covers it, without it; a corpus partition's manifest), so no reader sees it from then on, then
// its files. Dropping a plain partition leaves the step's fragments alone. Dropping a partition that is
// not committed removes what writers left of it.
func (l *Lake) Drop(ctx context.Context, key PartitionKey) error {
	if key.Corpus == "" {
		if _, err := l.dropFromRecord(ctx, key); err != nil {
			return err
		}
	} else if err := l.store.Delete(ctx, key.ManifestKey()); err != nil {
		return err
	}
	objs, err := l.store.List(ctx, key.Dir()+"/")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if key.Fragment == "" && strings.HasPrefix(o.Key, key.Dir()+"/"+fragmentPrefix) {
			continue
		}
		if err := l.store.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return nil
}

// Manifest returns a committed partition's manifest: a run partition's from the newest record that
// covers it, a corpus partition's own; ErrNotCommitted if nothing commits it.
func (l *Lake) Manifest(ctx context.Context, key PartitionKey) (*Manifest, error) {
	if key.Corpus != "" {
		return l.corpusManifest(ctx, key)
	}
	recs, err := l.committedRecords(ctx, key.Run, key.Step)
	if err != nil {
		return nil, err
	}
	if m := recordPartitions(recs, key.Table)[key]; m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNotCommitted, key)
}

// Committed reports whether a commit covers a partition.
func (l *Lake) Committed(ctx context.Context, key PartitionKey) (bool, error) {
	_, err := l.Manifest(ctx, key)
	if errors.Is(err, ErrNotCommitted) {
		return false, nil
	}
	return err == nil, err
}

// LocalFiles returns local paths of every committed part file of a table: in place for a local lake,
// through the verified cache for S3. The paths are ordered by step then file name.
func (l *Lake) LocalFiles(ctx context.Context, run, table string) ([]string, error) {
	parts, err := l.Partitions(ctx, run, table)
	if err != nil {
		return nil, err
	}
	return l.partitionFiles(ctx, parts)
}

// RunListing is what one listing of a run's committed partitions says about every table at once: what
// LocalFiles and Steps return per table, for readers that need every table (a DuckDB session over the
// run) and would otherwise list the run once per table.
type RunListing struct {
	// Files are each table's committed part files as LocalFiles returns them (ordered by step, then file
	// name); a table with none is absent.
	Files map[string][]string
	// Steps are each table's committed steps, ascending, as Steps returns them.
	Steps map[string][]int64
}

// ListRun lists a run's committed partitions of every table once (Partitions with no table) and returns
// their local files and steps by table.
func (l *Lake) ListRun(ctx context.Context, run string) (*RunListing, error) {
	parts, err := l.Partitions(ctx, run, "")
	if err != nil {
		return nil, err
	}
	out := &RunListing{Files: map[string][]string{}, Steps: map[string][]int64{}}
	// Partitions sorts by table, then step, so each table's partitions are one stretch.
	for start := 0; start < len(parts); {
		table := parts[start].Key.Table
		end := start
		for end < len(parts) && parts[end].Key.Table == table {
			if steps := out.Steps[table]; len(steps) == 0 || steps[len(steps)-1] != parts[end].Key.Step {
				out.Steps[table] = append(steps, parts[end].Key.Step)
			}
			end++
		}
		files, err := l.partitionFiles(ctx, parts[start:end])
		if err != nil {
			return nil, err
		}
		if len(files) > 0 {
			out.Files[table] = files
		}
		start = end
	}
	return out, nil
}

// CorpusFiles returns local paths of a corpus's part files.
func (l *Lake) CorpusFiles(ctx context.Context, corpus string) ([]string, error) {
	key := CorpusKey(corpus)
	m, err := l.Manifest(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.partitionFiles(ctx, []Partition{{Key: key, Manifest: m}})
}

func (l *Lake) partitionFiles(ctx context.Context, parts []Partition) ([]string, error) {
	var paths []string
	for _, p := range parts {
		for _, f := range p.Manifest.Files {
			path, err := l.localFile(ctx, p.Key, f)
			if err != nil {
				return nil, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}

// localFile returns the local path of a committed file of part, checked against its commit record
// (checkLocalFile: once per process and file): in place for a local lake, the cache's verified copy
// for S3 (checked again on a cache hit, since a cached file can be damaged too).
func (l *Lake) localFile(ctx context.Context, part PartitionKey, f FileEntry) (string, error) {
	key := part.Dir() + "/" + f.Name
	var path string
	if lp, ok := l.store.(LocalPather); ok {
		path = lp.LocalPath(key)
	} else {
		var err error
		if path, err = l.cache.Fetch(ctx, l.store, key, f); err != nil {
			return "", err
		}
	}
	if err := l.checkLocalFile(part, key, path, f); err != nil {
		return "", err
	}
	return path, nil
}

// CorpusKey is the partition key of a corpus.
func CorpusKey(name string) PartitionKey { return PartitionKey{Corpus: name, Table: "corpus"} }
