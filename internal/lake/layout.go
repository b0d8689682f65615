package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Layout is the version of the lake's rules this package writes and reads: 3 commits every partition of
// a run by a commit record (records.go); 2 also committed a run's partitions written outside stages by
// their own _manifest.json; 1 (every lake written before the layout file existed) also padded steps to
// six digits and named fragments fragment=<name>. Upgrade carries a lake of layout 1 or 2 to 3: it
// renames layout 1's folders and turns a run's manifests into commit records; file names and contents
// stay.
const Layout = 3

// layoutKey is the lake's layout file, at its root.
const layoutKey = "_lake.json"

// ErrOldLayout is returned by Open for a lake written in layout 1 or 2: it must be upgraded once
// (Upgrade, `spade lake upgrade`) before this version reads or writes it.
var ErrOldLayout = errors.New("lake: older layout")

// layoutFile is the content of _lake.json.
type layoutFile struct {
	Layout int `json:"layout"`
}

// checkLayout is Open's guard: a lake with a layout file must have this package's layout, or layout 2
// without any run partition committed by its own manifest (then the file is updated); a lake without
// one is either new or empty (the file is written, best effort: a read-only credential cannot, and then
// the next Open looks again) or was written in an older layout (ErrOldLayout, naming an object Upgrade
// changes and the command that upgrades it). Costs one small read when the file exists.
func (l *Lake) checkLayout(ctx context.Context) error {
	body, err := ReadAll(ctx, l.store, layoutKey)
	switch {
	case err == nil:
		var f layoutFile
		if err := json.Unmarshal(body, &f); err != nil {
			return fmt.Errorf("lake: corrupt layout file %s/%s: %v", l.URI(), layoutKey, err)
		}
		if f.Layout == 2 {
			// Layout 2 differs only where a run's partition has its own manifest: a lake with none is
			// layout 3 already, and its file says so from now on (best effort, as for a new lake).
			if err := l.checkNotLayoutOne(ctx); err != nil {
				return err
			}
			l.store.Put(ctx, layoutKey, layoutFileBody())
			return nil
		}
		if f.Layout != Layout {
			return fmt.Errorf("lake: %s has layout %d, and this spade reads layout %d: use the spade version that wrote it", l.URI(), f.Layout, Layout)
		}
		return nil
	case !errors.Is(err, ErrNotFound):
		return err
	}
	if err := l.checkNotLayoutOne(ctx); err != nil {
		return err
	}
	l.writeLayoutFile(ctx) // best effort: see the doc comment
	return nil
}

// checkNotLayoutOne gives ErrOldLayout, naming an object and the command that upgrades the lake, when
// the lake has any key Upgrade changes.
func (l *Lake) checkNotLayoutOne(ctx context.Context) error {
	old, err := l.layoutOneKeys(ctx, 1)
	if err != nil {
		return err
	}
	if len(old) > 0 {
		return fmt.Errorf("%w at %s (for example %s): run `spade --lake %s lake upgrade` once, with no other spade command running on this lake",
			ErrOldLayout, l.URI(), old[0], l.URI())
	}
	return nil
}

// writeLayoutFile records this package's layout at the lake's root.
func (l *Lake) writeLayoutFile(ctx context.Context) error {
	err := l.store.PutIfAbsent(ctx, layoutKey, layoutFileBody())
	if errors.Is(err, ErrExists) {
		return nil
	}
	return err
}

// layoutOneKeys lists up to limit keys (every one when limit <= 0) that Upgrade changes: below runs/,
// corpora/ and pools/, a padded step folder or a fragment=<name> folder (layout 1), and a run
// partition's _manifest.json (layouts 1 and 2).
func (l *Lake) layoutOneKeys(ctx context.Context, limit int) ([]string, error) {
	var out []string
	for _, prefix := range []string{runsPrefix, corporaPrefix, poolsPrefix} {
		objs, err := l.store.List(ctx, prefix)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if upgradedKey(o.Key) != o.Key || (prefix == runsPrefix && isRunManifest(o.Key)) {
				out = append(out, o.Key)
				if limit > 0 && len(out) >= limit {
					return out, nil
				}
			}
		}
	}
	return out, nil
}

// upgradedKey is key's name in layout 2: every padded step folder unpadded (step=000002 → step=2) and
// every fragment=<name> folder renamed fragment-<name>. A layout-2 key is returned unchanged.
func upgradedKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts[:len(parts)-1] { // folders only; the file name stays
		if n, ok := parseStepSegment(p); ok {
			parts[i] = stepSegment(n)
		} else if name, found := strings.CutPrefix(p, "fragment="); found && ValidFragment(name) == nil {
			parts[i] = fragmentPrefix + name
		}
	}
	return strings.Join(parts, "/")
}

// isRunManifest reports whether key is a run partition's own _manifest.json (layouts 1 and 2).
func isRunManifest(key string) bool {
	run, rel, ok := strings.Cut(strings.TrimPrefix(key, runsPrefix), "/")
	if !ok || run == "" {
		return false
	}
	_, _, _, ok = parseManifestKey(upgradedKey(rel))
	return ok
}

// UpgradeReport says what Upgrade did.
type UpgradeReport struct {
	// Moved is how many objects were renamed; Bytes their total size.
	Moved int
	Bytes int64
	// Converted is how many run partitions' manifests became commit records.
	Converted int
	// AlreadyCurrent is true when the lake needed no change.
	AlreadyCurrent bool
}

// Upgrade carries a lake of layout 1 or 2 to Layout and writes the layout file. It renames layout 1's
// objects (each copied to its new name, then the old one deleted), then turns every run partition's own
// _manifest.json into a commit record (convertManifests), so an interrupted upgrade loses nothing and a
// second run finishes it. Part files are untouched: manifests and commit records name files relative to
// their partition's folder and steps as numbers. No other spade command may use the lake meanwhile (a
// reader would see a half-upgraded lake; an older spade writing would create manifests again). A lake
// already at Layout is left as it is.
func (l *Lake) Upgrade(ctx context.Context) (UpgradeReport, error) {
	var rep UpgradeReport
	old, err := l.layoutOneKeys(ctx, 0)
	if err != nil {
		return rep, err
	}
	// Commit records and manifests last: until they move, the renamed parts are not yet anyone's.
	sort.SliceStable(old, func(i, j int) bool { return !isCommitObject(old[i]) && isCommitObject(old[j]) })
	for _, key := range old {
		if upgradedKey(key) == key {
			continue // a run's manifest in place: convertManifests turns it into a record
		}
		body, err := ReadAll(ctx, l.store, key)
		if errors.Is(err, ErrNotFound) {
			continue // moved by an earlier, interrupted upgrade between its put and delete
		}
		if err != nil {
			return rep, err
		}
		if err := l.store.Put(ctx, upgradedKey(key), body); err != nil {
			return rep, err
		}
		if err := l.store.Delete(ctx, key); err != nil {
			return rep, err
		}
		rep.Moved++
		rep.Bytes += int64(len(body))
	}
	if rep.Converted, err = l.convertManifests(ctx); err != nil {
		return rep, err
	}
	if local, ok := l.store.(*Local); ok {
		removeEmptyDirs(local.URI())
	}
	rep.AlreadyCurrent = rep.Moved == 0 && rep.Converted == 0
	return rep, l.store.Put(ctx, layoutKey, layoutFileBody())
}

// layoutFileBody is the content of _lake.json for this package's layout.
func layoutFileBody() []byte {
	body, _ := json.Marshal(layoutFile{Layout: Layout})
	return append(body, '\n')
}

// isCommitObject reports whether key is a manifest or a commit record: the objects that make parts visible.
func isCommitObject(key string) bool {
	return strings.HasSuffix(key, "/_manifest.json") || strings.Contains(key, "/_commits/")
}

// removeEmptyDirs removes the folders below root that an upgrade emptied (deepest first); the local
// store's Delete removes files only.
func removeEmptyDirs(root string) {
	var dirs []string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != root {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // fails, harmlessly, on a folder that still holds something
	}
}

// UpgradeStage is the stage name of the records Upgrade writes: one per run and step, listing the
// partitions that step had committed by their own _manifest.json.
const UpgradeStage = "upgrade"

// convertManifests turns the _manifest.json of every run partition into a partition of the step's
// UpgradeStage record, unless a commit record already covers the partition at the same or a higher
// generation (then the manifest was superseded), and deletes the manifests and the partition's old shard
// markers and claims. It returns how many manifests it converted.
func (l *Lake) convertManifests(ctx context.Context) (int, error) {
	runs, err := l.Runs(ctx)
	if err != nil {
		return 0, err
	}
	converted := 0
	for _, run := range runs {
		objs, err := l.store.List(ctx, runsPrefix+run+"/")
		if err != nil {
			return converted, err
		}
		byStep := map[int64][]RecordPartition{}
		var stale []string
		for _, o := range objs {
			rel := strings.TrimPrefix(o.Key, runsPrefix+run+"/")
			if strings.Contains(rel, "/_shards/") && !strings.HasPrefix(rel, "_commits/") {
				stale = append(stale, o.Key)
				continue
			}
			table, step, fragment, ok := parseManifestKey(rel)
			if !ok {
				continue
			}
			stale = append(stale, o.Key)
			body, err := ReadAll(ctx, l.store, o.Key)
			if err != nil {
				return converted, err
			}
			m, err := decodeManifest(o.Key, body)
			if err != nil {
				return converted, err
			}
			key := PartitionKey{Run: run, Table: table, Step: step, Fragment: fragment}
			if cur, err := l.Manifest(ctx, key); err == nil && cur.Generation >= m.Generation {
				continue // a stage's record superseded it
			}
			byStep[step] = append(byStep[step], RecordPartition{Table: table, Fragment: fragment, Manifest: *m})
			converted++
		}
		for step, parts := range byStep {
			if err := l.addToRecord(ctx, run, UpgradeStage, step, parts, "spade lake upgrade (partitions committed by their own manifest)"); err != nil {
				return converted, err
			}
		}
		for _, k := range stale {
			if err := l.store.Delete(ctx, k); err != nil {
				return converted, err
			}
		}
	}
	return converted, nil
}
