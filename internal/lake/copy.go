package lake

import (
	"context"
	"fmt"
	"time"
)

// CopyRun copies every committed partition (plain and fragments, every table) of run `from` at steps ≤
// upTo into run `to`, file for file: the part files keep their bytes and names, and each step's copies
// commit in one record of stage CopyStage (same files, rows and generations; the writer names the
// source), so the copy is a partition like any other. A partition already committed in `to` is left as it
// is, so an interrupted copy can be run again. It returns the number of partitions copied. It does not
// create `to`'s run.json: the caller commits that last, once the copy is whole.
func (l *Lake) CopyRun(ctx context.Context, from, to string, upTo int64) (int, error) {
	if err := ValidName(to); err != nil {
		return 0, fmt.Errorf("run: %w", err)
	}
	parts, err := l.Partitions(ctx, from, "")
	if err != nil {
		return 0, err
	}
	byStep := map[int64][]RecordPartition{}
	var steps []int64
	for _, p := range parts {
		if p.Key.Step > upTo {
			continue
		}
		dst := p.Key
		dst.Run = to
		done, err := l.Committed(ctx, dst)
		if err != nil {
			return 0, err
		}
		if done {
			continue
		}
		for _, f := range p.Manifest.Files {
			body, err := ReadAll(ctx, l.store, p.Key.Dir()+"/"+f.Name)
			if err != nil {
				return 0, fmt.Errorf("lake: copy %s: %w", p.Key, err)
			}
			if err := l.store.Put(ctx, dst.Dir()+"/"+f.Name, body); err != nil {
				return 0, fmt.Errorf("lake: copy %s: %w", p.Key, err)
			}
		}
		man := *p.Manifest
		man.Run = to
		man.Writer = "copy of " + p.Key.String()
		man.CommittedAt = time.Now().UTC().Format(time.RFC3339Nano)
		if len(byStep[dst.Step]) == 0 {
			steps = append(steps, dst.Step)
		}
		byStep[dst.Step] = append(byStep[dst.Step], RecordPartition{Table: dst.Table, Fragment: dst.Fragment, Manifest: man})
	}
	copied := 0
	for _, step := range steps {
		if err := l.addToRecord(ctx, to, CopyStage, step, byStep[step], "spade init --from "+from); err != nil {
			return copied, fmt.Errorf("lake: copy step %d of %s: %w", step, from, err)
		}
		copied += len(byStep[step])
	}
	return copied, nil
}

// CopyStage is the stage name of the records CopyRun writes.
const CopyStage = "copy"
