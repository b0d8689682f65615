package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// jobsPrefix holds a run's scheduler records: one object per submission an executor made (the Slurm
// job ids of `spade run --executor slurm`), created once and never changed, so two submitters never
// lose each other's records.
func jobsPrefix(run string) string { return runsPrefix + run + "/_jobs/" }

// PutJobRecord stores one submission record of run under name (a name the caller makes unique, such as
// the scheduler's job id); ErrExists when name is taken. The lake keeps the records beside the run (Verify
// counts them as committed metadata) and never reads their content.
func (l *Lake) PutJobRecord(ctx context.Context, run, name string, body []byte) error {
	if err := ValidName(run); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if name == "" || strings.ContainsAny(name, "/\\") {
		return fmt.Errorf("lake: job record name %q: want a non-empty name without slashes", name)
	}
	return l.store.PutIfAbsent(ctx, jobsPrefix(run)+name+".json", body)
}

// JobRecords returns every submission record of run, in name order (none for a run never submitted).
func (l *Lake) JobRecords(ctx context.Context, run string) ([][]byte, error) {
	objs, err := l.store.List(ctx, jobsPrefix(run))
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, ".json") {
			continue
		}
		body, err := ReadAll(ctx, l.store, o.Key)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, body)
	}
	return out, nil
}

// ShardsDone returns which shard processes (of shards) have finished a stage at a step that is not
// committed yet: those whose marker of the generation the next commit makes is complete. A re-run of
// any other shard completes the stage; shards <= 1 gives none.
func (l *Lake) ShardsDone(ctx context.Context, run, stage string, step int64, shards int) ([]int, error) {
	if shards <= 1 {
		return nil, nil
	}
	tx := l.Begin(TxnSpec{Run: run, Stage: stage, Step: step, Shards: shards, Force: true})
	if err := tx.init(ctx); err != nil {
		return nil, err
	}
	markers, err := tx.markers(ctx)
	if err != nil {
		return nil, err
	}
	var done []int
	for shard := range shards {
		if m, ok := markers[shard]; ok && m.Complete {
			done = append(done, shard)
		}
	}
	return done, nil
}

// isJobRecord reports whether key (below the run's prefix) is one of the run's scheduler records.
func isJobRecord(run, key string) bool {
	return strings.HasPrefix(key, jobsPrefix(run)) && strings.HasSuffix(key, ".json")
}
