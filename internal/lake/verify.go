package lake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// ProblemKind classifies what Verify found.
type ProblemKind string

// The problems Verify reports.
const (
	// ProblemMissing: a file a commit record references is not in the store.
	ProblemMissing ProblemKind = "missing"
	// ProblemCorrupt: a referenced file's size or sha256 differs from its record.
	ProblemCorrupt ProblemKind = "corrupt"
	// ProblemOrphan: an object no committed record references (a killed or losing writer's
	// parts, a superseded generation, its shard markers), older than the grace period.
	ProblemOrphan ProblemKind = "orphan"
	// ProblemTemporary: a half-written temporary file of a killed put, older than the grace period.
	ProblemTemporary ProblemKind = "temporary"
)

// Problem is one thing Verify found wrong.
type Problem struct {
	Kind ProblemKind
	// Key is the object's key in the lake.
	Key string
	// Partition names the table, step and fragment a missing or corrupt file belongs to; Stage the stage
	// whose record references it ("" for a partition committed outside stages).
	Partition PartitionKey
	Stage     string
	// Detail says what is wrong, for messages.
	Detail string
}

// VerifyOptions controls Verify.
type VerifyOptions struct {
	// Grace: objects younger than this are in-flight writes, never orphans.
	Grace time.Duration
	// SkipHash checks only that referenced files exist with their size (vacuum does not hash).
	SkipHash bool
	// Progress, when set, is called once with the number of files to check (total > 0, done 0), then
	// after each file is checked (from several goroutines at once); commands draw their progress with it.
	Progress func(done bool, total int)
}

// VerifyReport is what Verify found in one run.
type VerifyReport struct {
	Run string
	// Partitions and Files count what the committed records reference.
	Partitions, Files int
	Bytes             int64
	Problems          []Problem
}

// livePartition is one committed partition and where its manifest comes from.
type livePartition struct {
	key      PartitionKey
	stage    string
	manifest *Manifest
}

// Verify checks a run: every file a committed record references exists with its sha256, and
// every other object of the run (older than opts.Grace) but its scheduler records (PutJobRecord) is listed
// as an orphan or a temporary. One listing of the run, one read per record, and one read of
// every referenced file.
func (l *Lake) Verify(ctx context.Context, run string, opts VerifyOptions) (*VerifyReport, error) {
	prefix := runsPrefix + run + "/"
	objs, err := l.store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	live, keep, err := l.livePartitions(ctx, run, objs)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Run: run, Partitions: len(live)}
	stored := map[string]ObjectInfo{}
	for _, o := range objs {
		stored[o.Key] = o
	}
	type check struct {
		key string
		f   FileEntry
		p   *livePartition
	}
	var checks []check
	for i := range live {
		p := &live[i]
		for _, f := range p.manifest.Files {
			k := p.key.Dir() + "/" + f.Name
			keep[k] = true
			rep.Files++
			rep.Bytes += f.Bytes
			checks = append(checks, check{k, f, p})
		}
	}
	problems := make([]*Problem, len(checks))
	tick := func() {
		if opts.Progress != nil {
			opts.Progress(true, len(checks))
		}
	}
	if opts.Progress != nil {
		opts.Progress(false, len(checks))
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, c := range checks {
		problem := func(kind ProblemKind, detail string) {
			problems[i] = &Problem{Kind: kind, Key: c.key, Partition: c.p.key, Stage: c.p.stage, Detail: detail}
		}
		o, ok := stored[c.key]
		switch {
		case !ok:
			problem(ProblemMissing, "referenced by its commit record but not in the lake")
			tick()
			continue
		case o.Size != c.f.Bytes:
			problem(ProblemCorrupt, fmt.Sprintf("%d bytes, its record says %d", o.Size, c.f.Bytes))
			tick()
			continue
		case opts.SkipHash:
			tick()
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer tick()
			got, err := l.hashObject(ctx, c.key)
			switch {
			case errors.Is(err, ErrNotFound):
				problem(ProblemMissing, "referenced by its commit record but not in the lake")
			case err != nil:
				problem(ProblemCorrupt, err.Error())
			case got != c.f.SHA256:
				problem(ProblemCorrupt, fmt.Sprintf("sha256 %s, its record says %s", got[:12], c.f.SHA256[:12]))
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, p := range problems {
		if p != nil {
			rep.Problems = append(rep.Problems, *p)
		}
	}
	cutoff := time.Now().Add(-opts.Grace)
	old := func(o ObjectInfo) bool { return o.ModTime.IsZero() || o.ModTime.Before(cutoff) }
	for _, o := range objs {
		if keep[o.Key] || isJobRecord(run, o.Key) || !old(o) {
			continue
		}
		rep.Problems = append(rep.Problems, Problem{Kind: ProblemOrphan, Key: o.Key, Detail: orphanDetail(o.Key)})
	}
	if tl, ok := l.store.(TempLister); ok {
		temps, err := tl.Temporaries(ctx, prefix)
		if err != nil {
			return nil, err
		}
		for _, o := range temps {
			if old(o) {
				rep.Problems = append(rep.Problems, Problem{Kind: ProblemTemporary, Key: o.Key, Detail: "a put killed before it finished"})
			}
		}
	}
	sort.SliceStable(rep.Problems, func(i, j int) bool { return rep.Problems[i].Key < rep.Problems[j].Key })
	return rep, nil
}

func orphanDetail(key string) string {
	switch name := key[strings.LastIndex(key, "/")+1:]; {
	case strings.Contains(key, "/_commits/") && strings.Contains(key, "/_shards/"):
		return "a shard marker of an uncommitted or superseded generation"
	case strings.Contains(key, "/_commits/"):
		return "a superseded commit record"
	case strings.HasSuffix(name, ".parquet"):
		return "a part file no commit record references (a killed or losing writer's, or a replaced generation's)"
	}
	return "referenced by no commit record"
}

// livePartitions returns the committed partitions of a run given a listing of it, and the set of keys
// that are committed metadata (run.json, the newest records).
func (l *Lake) livePartitions(ctx context.Context, run string, objs []ObjectInfo) ([]livePartition, map[string]bool, error) {
	keep := map[string]bool{runConfigKey(run): true}
	heads := headsOf(run, objs)
	byKey := map[PartitionKey]livePartition{}
	for _, h := range heads {
		rec, err := l.readRecord(ctx, h.key)
		if err != nil {
			return nil, nil, err
		}
		keep[h.key] = true
		for i := range rec.Partitions {
			p := &rec.Partitions[i]
			key := p.Key(run, rec.Step)
			if cur, ok := byKey[key]; !ok || p.Manifest.Generation >= cur.manifest.Generation {
				byKey[key] = livePartition{key: key, stage: rec.Stage, manifest: &p.Manifest}
			}
		}
	}
	out := make([]livePartition, 0, len(byKey))
	for _, p := range byKey {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key.String() < out[j].key.String() })
	return out, keep, nil
}

// hashObject returns the lowercase hex sha256 of an object's content.
func (l *Lake) hashObject(ctx context.Context, key string) (string, error) {
	rc, err := l.store.Get(ctx, key)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", fmt.Errorf("lake: read %s: %w", key, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// VacuumOptions controls Vacuum.
type VacuumOptions struct {
	// OlderThan: only objects older than this are removed, so writes in flight are never touched.
	OlderThan time.Duration
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// Vacuum removes a run's orphans (objects no committed record references: killed and losing
// writers' parts, superseded generations, their records and shard markers) and temporaries, older than
// opts.OlderThan. It never removes what a committed record references. It returns what it removed (or
// would remove, with DryRun).
func (l *Lake) Vacuum(ctx context.Context, run string, opts VacuumOptions) ([]Problem, error) {
	rep, err := l.Verify(ctx, run, VerifyOptions{Grace: opts.OlderThan, SkipHash: true})
	if err != nil {
		return nil, err
	}
	var removed []Problem
	for _, p := range rep.Problems {
		if p.Kind != ProblemOrphan && p.Kind != ProblemTemporary {
			continue
		}
		if !opts.DryRun {
			if err := l.store.Delete(ctx, p.Key); err != nil {
				return removed, err
			}
		}
		removed = append(removed, p)
	}
	return removed, nil
}
