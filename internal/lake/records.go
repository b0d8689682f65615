package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Record is a stage's commit record at a step: the one object whose conditional put makes everything the
// stage wrote there visible (every table, every shard, every fragment), like a Delta Lake or Iceberg
// snapshot. Generation g of a stage's record lives at runs/<run>/_commits/step=<n>/<stage>/gGGGGGG.json
// and is never changed once created; the newest generation present is the committed one, so a forced
// re-run swaps the stage's partitions in one put, and a writer whose put fails changed nothing visible.
type Record struct {
	// Run, Stage and Step name the record; Generation counts its forced rewrites (0 first).
	Run        string `json:"run"`
	Stage      string `json:"stage"`
	Step       int64  `json:"step"`
	Generation int    `json:"generation"`
	// Shards is how many shard processes contributed.
	Shards int `json:"shards"`
	// Partitions lists every partition the stage committed at the step, sorted by table then fragment,
	// each with its manifest (the files with their sha256).
	Partitions []RecordPartition `json:"partitions"`
	// Writer and CommittedAt identify the committing process and the commit time (RFC 3339 UTC).
	Writer      string `json:"writer"`
	CommittedAt string `json:"committed_at"`
}

// RecordPartition is one partition a record covers.
type RecordPartition struct {
	Table    string   `json:"table"`
	Fragment string   `json:"fragment,omitempty"`
	Manifest Manifest `json:"manifest"`
}

// Key returns the partition's key in run at step.
func (p RecordPartition) Key(run string, step int64) PartitionKey {
	return PartitionKey{Run: run, Table: p.Table, Step: step, Fragment: p.Fragment}
}

// recordCache keeps decoded records by key: a record is never changed once created.
type recordCache struct {
	mu   sync.Mutex
	byID map[string]*Record
}

func (l *Lake) readRecord(ctx context.Context, key string) (*Record, error) {
	l.records.mu.Lock()
	r, ok := l.records.byID[key]
	l.records.mu.Unlock()
	if ok {
		return r, nil
	}
	body, err := ReadAll(ctx, l.store, key)
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, fmt.Errorf("lake: corrupt commit record %s: %v", key, err)
	}
	l.records.mu.Lock()
	if l.records.byID == nil {
		l.records.byID = map[string]*Record{}
	}
	l.records.byID[key] = &rec
	l.records.mu.Unlock()
	return &rec, nil
}

// recordHead is the newest generation of one stage's record at one step, from a listing.
type recordHead struct {
	step  int64
	stage string
	gen   int
	key   string
}

// recordHeads lists the newest record generation of every stage at every step under prefix (a prefix
// within commitsPrefix(run)).
func (l *Lake) recordHeads(ctx context.Context, run, prefix string) ([]recordHead, error) {
	objs, err := l.store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return headsOf(run, objs), nil
}

func headsOf(run string, objs []ObjectInfo) []recordHead {
	type id struct {
		step  int64
		stage string
	}
	newest := map[id]recordHead{}
	base := commitsPrefix(run)
	for _, o := range objs {
		step, stage, gen, ok := parseRecordKey(strings.TrimPrefix(o.Key, base))
		if !ok || !strings.HasPrefix(o.Key, base) {
			continue
		}
		k := id{step, stage}
		if h, seen := newest[k]; !seen || gen > h.gen {
			newest[k] = recordHead{step: step, stage: stage, gen: gen, key: o.Key}
		}
	}
	heads := make([]recordHead, 0, len(newest))
	for _, h := range newest {
		heads = append(heads, h)
	}
	sort.Slice(heads, func(i, j int) bool {
		if heads[i].step != heads[j].step {
			return heads[i].step < heads[j].step
		}
		return heads[i].stage < heads[j].stage
	})
	return heads
}

// committedRecords reads the committed record of every stage at step (every step when step < 0).
func (l *Lake) committedRecords(ctx context.Context, run string, step int64) ([]*Record, error) {
	prefix := commitsPrefix(run)
	if step >= 0 {
		prefix = commitStepPrefix(run, step)
	}
	heads, err := l.recordHeads(ctx, run, prefix)
	if err != nil {
		return nil, err
	}
	recs, errs := readEach(len(heads), func(i int) (*Record, error) { return l.readRecord(ctx, heads[i].key) })
	return recs, errors.Join(errs...)
}

// readEach calls read(i) for every i in [0, n), 16 at a time (small objects: commit records,
// manifests, each a round trip on S3), and returns the results and errors in index order.
func readEach[T any](n int, read func(i int) (T, error)) ([]T, []error) {
	out, errs := make([]T, n), make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = read(i)
		}()
	}
	wg.Wait()
	return out, errs
}

// recordPartitions maps each partition covered by a committed record to its manifest (filtered by table
// when table is set).
func recordPartitions(recs []*Record, table string) map[PartitionKey]*Manifest {
	out := map[PartitionKey]*Manifest{}
	for _, r := range recs {
		for i := range r.Partitions {
			p := &r.Partitions[i]
			if table != "" && p.Table != table {
				continue
			}
			key := p.Key(r.Run, r.Step)
			if m, ok := out[key]; !ok || p.Manifest.Generation >= m.Generation {
				out[key] = &p.Manifest
			}
		}
	}
	return out
}

// dropFromRecord removes a partition from the committed record that covers it, with a new generation of
// that record listing everything else; it reports whether a record covered the partition.
func (l *Lake) dropFromRecord(ctx context.Context, key PartitionKey) (bool, error) {
	recs, err := l.committedRecords(ctx, key.Run, key.Step)
	if err != nil {
		return false, err
	}
	for _, r := range recs {
		next := *r
		next.Partitions = nil
		for _, p := range r.Partitions {
			if p.Table != key.Table || p.Fragment != key.Fragment {
				next.Partitions = append(next.Partitions, p)
			}
		}
		if len(next.Partitions) == len(r.Partitions) {
			continue
		}
		next.Generation = r.Generation + 1
		next.Writer = writerLabel(newWriterID()) + " (drop " + key.String() + ")"
		next.CommittedAt = time.Now().UTC().Format(time.RFC3339Nano)
		body, _ := json.MarshalIndent(next, "", "  ")
		if err := l.store.PutIfAbsent(ctx, recordKey(r.Run, r.Stage, r.Step, next.Generation), body); err != nil {
			return true, fmt.Errorf("lake: drop %s: %w", key, err)
		}
		return true, nil
	}
	return false, nil
}

// addToRecord commits the next generation of stage's record at step of run: the newest generation's
// partitions with parts added (a partition in both takes parts' manifest). For writers that commit files
// already in place (Upgrade, CopyRun); a second call after an interrupted one finishes its work.
func (l *Lake) addToRecord(ctx context.Context, run, stage string, step int64, parts []RecordPartition, writer string) error {
	next := &Record{Run: run, Stage: stage, Step: step, Shards: 1, Partitions: []RecordPartition{}}
	heads, err := l.recordHeads(ctx, run, commitStepPrefix(run, step)+stage+"/")
	if err != nil {
		return err
	}
	for _, h := range heads {
		if h.stage != stage {
			continue
		}
		prev, err := l.readRecord(ctx, h.key)
		if err != nil {
			return err
		}
		next.Generation = prev.Generation + 1
		for _, p := range prev.Partitions {
			if !slices.ContainsFunc(parts, func(q RecordPartition) bool { return q.Table == p.Table && q.Fragment == p.Fragment }) {
				next.Partitions = append(next.Partitions, p)
			}
		}
	}
	next.Partitions = append(next.Partitions, parts...)
	sort.Slice(next.Partitions, func(i, j int) bool {
		a, b := next.Partitions[i], next.Partitions[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return a.Fragment < b.Fragment
	})
	next.Writer, next.CommittedAt = writer, time.Now().UTC().Format(time.RFC3339Nano)
	body, _ := json.MarshalIndent(next, "", "  ")
	return l.store.PutIfAbsent(ctx, recordKey(run, stage, step, next.Generation), body)
}
