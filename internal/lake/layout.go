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

// Layout is the version of the lake's path rules this package writes and reads: 2 names steps step=<n>
// and fragments fragment-<name>; 1 (every lake written before the layout file existed) padded steps to
// six digits and named fragments fragment=<name>. File names, manifests and commit records are the same
// in both, so an upgrade only renames.
const Layout = 2

// layoutKey is the lake's layout file, at its root.
const layoutKey = "_lake.json"

// ErrOldLayout is returned by Open for a lake written in layout 1: it must be upgraded once (Upgrade,
// `spade lake upgrade`) before this version reads or writes it.
var ErrOldLayout = errors.New("lake: layout 1 (padded step=NNNNNN folders)")

// layoutFile is the content of _lake.json.
type layoutFile struct {
	Layout int `json:"layout"`
}

// checkLayout is Open's guard: a lake with a layout file must have this package's layout; a lake without
// one is either new or empty (the file is written, best effort: a read-only credential cannot, and then
// the next Open looks again) or was written in layout 1 (ErrOldLayout, naming a padded folder and the
// command that upgrades it). Costs one small read when the file exists.
func (l *Lake) checkLayout(ctx context.Context) error {
	body, err := ReadAll(ctx, l.store, layoutKey)
	switch {
	case err == nil:
		var f layoutFile
		if err := json.Unmarshal(body, &f); err != nil {
			return fmt.Errorf("lake: corrupt layout file %s/%s: %v", l.URI(), layoutKey, err)
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

// checkNotLayoutOne gives ErrOldLayout, naming a padded folder and the command that upgrades the lake,
// when the lake has any key layout 1 named differently.
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

// layoutOneKeys lists up to limit keys (every one when limit <= 0) that layout 1 named differently: below
// runs/, corpora/ and pools/, a padded step folder or a fragment=<name> folder.
func (l *Lake) layoutOneKeys(ctx context.Context, limit int) ([]string, error) {
	var out []string
	for _, prefix := range []string{runsPrefix, corporaPrefix, poolsPrefix} {
		objs, err := l.store.List(ctx, prefix)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if upgradedKey(o.Key) != o.Key {
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

// UpgradeReport says what Upgrade did.
type UpgradeReport struct {
	// Moved is how many objects were renamed; Bytes their total size.
	Moved int
	Bytes int64
	// AlreadyCurrent is true when the lake needed no rename.
	AlreadyCurrent bool
}

// Upgrade renames a layout-1 lake's objects to layout 2 and writes the layout file. Each object is
// copied to its new name, then the old one is deleted, so an interrupted upgrade loses nothing and a
// second run finishes it. Contents are untouched: manifests and commit records name files relative to
// their partition's folder and steps as numbers. No other spade command may use the lake meanwhile (a
// reader would see a half-renamed lake; an older spade writing would create padded folders again).
// A lake already at layout 2 is left as it is.
func (l *Lake) Upgrade(ctx context.Context) (UpgradeReport, error) {
	var rep UpgradeReport
	old, err := l.layoutOneKeys(ctx, 0)
	if err != nil {
		return rep, err
	}
	// Commit records and manifests last: until they move, the renamed parts are not yet anyone's.
	sort.SliceStable(old, func(i, j int) bool { return !isCommitObject(old[i]) && isCommitObject(old[j]) })
	for _, key := range old {
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
	if local, ok := l.store.(*Local); ok {
		removeEmptyDirs(local.URI())
	}
	rep.AlreadyCurrent = rep.Moved == 0
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
