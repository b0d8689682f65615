package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// FileEntry describes one committed part file.
type FileEntry struct {
	// Name is the file's name within the partition directory.
	Name string `json:"name"`
	// Rows is the number of rows in the file.
	Rows int64 `json:"rows"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// SHA256 is the lowercase hex sha256 of the file's content.
	SHA256 string `json:"sha256"`
}

// Manifest describes one committed partition: its files and totals. A run's partitions have theirs in
// the commit record that covers them (RecordPartition); a corpus, a benchmark and an env pool, one
// partition each, commit theirs as the partition's own _manifest.json (commitCorpus).
type Manifest struct {
	// Table, Run (or Corpus) and Step name the partition.
	Table  string `json:"table"`
	Run    string `json:"run,omitempty"`
	Corpus string `json:"corpus,omitempty"`
	Step   int64  `json:"step"`
	// SchemaVersion is the table's schemas.Spec version the rows were written with.
	SchemaVersion int `json:"schema_version"`
	// Generation counts rewrites: 0 for the first commit, +1 for each forced one.
	Generation int `json:"generation"`
	// Shards is how many shard writers contributed files.
	Shards int `json:"shards"`
	// Files lists every part file, sorted by name; Rows and Bytes are their totals.
	Files []FileEntry `json:"files"`
	Rows  int64       `json:"rows"`
	Bytes int64       `json:"bytes"`
	// Writer identifies the committing process (writer id, host, pid), for messages.
	Writer string `json:"writer"`
	// CommittedAt is the commit time, RFC 3339 UTC.
	CommittedAt string `json:"committed_at"`
}

func decodeManifest(key string, body []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("lake: corrupt manifest %s: %v", key, err)
	}
	return &m, nil
}

// corpusManifest reads a corpus partition's _manifest.json; ErrNotCommitted if it has none.
func (l *Lake) corpusManifest(ctx context.Context, key PartitionKey) (*Manifest, error) {
	body, err := ReadAll(ctx, l.store, key.ManifestKey())
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotCommitted, key)
	}
	if err != nil {
		return nil, err
	}
	return decodeManifest(key.ManifestKey(), body)
}

// commitCorpus commits every partition a corpus transaction wrote, each by its manifest: a first commit
// with a conditional put of _manifest.json, a replacement (Force) by claiming its generation first
// (commitForced). Of two importers of one partition exactly one commits; the other gets
// ErrConcurrentWriter and its parts are removed.
func (t *Txn) commitCorpus(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, byShard := range t.parts {
		w := byShard[0]
		now := time.Now().UTC().Format(time.RFC3339Nano)
		man := Manifest{Table: key.Table, Corpus: key.Corpus, Step: key.Step, SchemaVersion: w.SchemaVersion,
			Generation: w.gen, Shards: 1, Files: append([]FileEntry{}, w.Files...), Writer: writerLabel(t.writer), CommittedAt: now}
		sort.Slice(man.Files, func(i, j int) bool { return man.Files[i].Name < man.Files[j].Name })
		for _, f := range man.Files {
			man.Rows += f.Rows
			man.Bytes += f.Bytes
		}
		body, _ := json.MarshalIndent(man, "", "  ")
		if man.Generation > 0 {
			if _, err := commitForced(ctx, t.lk, key, &man, body, w.Files); err != nil {
				return err
			}
			continue
		}
		err := t.lk.store.PutIfAbsent(ctx, key.ManifestKey(), body)
		if errors.Is(err, ErrExists) {
			winner, merr := t.lk.corpusManifest(ctx, key)
			if merr != nil {
				return merr
			}
			return lostCommit(ctx, t.lk, key, winner, w.Files)
		}
		if err != nil {
			return err
		}
		t.lk.removeUnreferenced(ctx, key, man.Files, man.Generation)
	}
	return nil
}

// commitClaimKey is the key a replacing importer creates (conditionally) to claim a generation of a
// corpus partition; its body is the generation's manifest, so an interrupted commit can be rolled forward.
func (k PartitionKey) commitClaimKey(generation int) string {
	return fmt.Sprintf("%s/_shards/g%06d/_commit.json", k.Dir(), generation)
}

// commitForced commits a new generation of a committed corpus partition: it claims the generation with a
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
	lk.removeUnreferenced(ctx, key, man.Files, man.Generation)
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
		if m, err := l.corpusManifest(ctx, key); err == nil && m.Generation >= gen {
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

// removeUnreferenced deletes, after a commit, the partition's part files written at generation gen or
// older that files does not list (the parts of killed writers, of a shard written again, and of replaced
// generations). Parts of newer generations belong to forced writers still uploading and are left alone.
// Failures are ignored: garbage is invisible to readers.
func (l *Lake) removeUnreferenced(ctx context.Context, key PartitionKey, files []FileEntry, gen int) {
	keep := map[string]bool{}
	for _, f := range files {
		keep[f.Name] = true
	}
	objs, err := l.store.List(ctx, key.Dir()+"/part-")
	if err != nil {
		return
	}
	for _, o := range objs {
		if g, ok := partGeneration(o.Key); ok && g <= gen && !keep[o.Key[strings.LastIndex(o.Key, "/")+1:]] {
			l.store.Delete(ctx, o.Key)
		}
	}
}
