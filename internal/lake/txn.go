package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// TxnSpec is a transaction's scope: a run's step, written by one stage (or one writer outside stages,
// named in Stage), as one shard process; or, with Corpus set, an import of what a lake holds beside its
// runs (a corpus, a benchmark, an env pool).
type TxnSpec struct {
	// Run, Stage and Step: the record the transaction commits, runs/<run>/_commits/step=<n>/<stage>/.
	// Stage is a name of letters, digits, '.', '_' and '-' (a stage, or a writer outside stages).
	Run   string
	Stage string
	Step  int64
	// Corpus, instead of Run and Step: the transaction covers the partitions of that name below corpora/
	// and pools/, each committed by its own _manifest.json (one partition per import, no steps).
	Corpus string
	// Shard and Shards: this process's share (Shards <= 1: the whole step).
	Shard, Shards int
	// Force makes the commit a new generation replacing a committed one; without it a committed record
	// makes the transaction fail (ErrConcurrentWriter; ErrCommitted for a corpus partition).
	Force bool
}

// Txn gathers everything one writer writes in its scope (every table, fragment and shard of a stage at a
// step) and commits it with one conditional put: of the stage's Record, or of a corpus partition's
// manifest. Until then nothing it wrote is visible. Stages get theirs from stage.Execute (Env.Txn);
// writers outside stages open their own (Begin, or CommitRows for one partition). Safe for concurrent
// use by the writer's goroutines.
type Txn struct {
	lk   *Lake
	spec TxnSpec

	once    sync.Once
	initErr error
	gen     int     // the record generation this transaction commits
	prev    *Record // the committed record it replaces, if any

	mu     sync.Mutex
	parts  map[PartitionKey]map[int]pendingShard // by partition, then the write's own shard index
	bases  map[PartitionKey]*Manifest            // a corpus scope's committed manifests it replaces
	mine   []string                              // keys of every part file this process uploaded
	writer string
}

// pendingShard is what one write (one shard of one partition) uploaded.
type pendingShard struct {
	Table         string      `json:"table"`
	Fragment      string      `json:"fragment,omitempty"`
	Shard         int         `json:"shard"`
	Shards        int         `json:"shards"`
	SchemaVersion int         `json:"schema_version"`
	Files         []FileEntry `json:"files"`
	gen           int         // the generation the files were written at
}

// txnMarker is a shard process's marker: every write of that process. Complete is set once its stage
// returned; the step commits when every process's marker is complete.
type txnMarker struct {
	Shard    int            `json:"shard"`
	Shards   int            `json:"shards"`
	Writer   string         `json:"writer"`
	Complete bool           `json:"complete"`
	Writes   []pendingShard `json:"writes"`
}

// Begin opens a stage's transaction at a step. Nothing is read or written until its first write.
func (l *Lake) Begin(spec TxnSpec) *Txn {
	spec.Shards = max(spec.Shards, 1)
	return &Txn{lk: l, spec: spec, parts: map[PartitionKey]map[int]pendingShard{}, bases: map[PartitionKey]*Manifest{}, writer: newWriterID()}
}

// Lake returns the lake the transaction writes to.
func (t *Txn) Lake() *Lake { return t.lk }

// Run returns the run the transaction writes ("" for a corpus import, or for no transaction, which
// WriteRows then refuses).
func (t *Txn) Run() string {
	if t == nil {
		return ""
	}
	return t.spec.Run
}

// scope names the transaction's scope for messages.
func (t *Txn) scope() string {
	if t.spec.Corpus != "" {
		return fmt.Sprintf("%s of %s", t.spec.Stage, t.spec.Corpus)
	}
	return fmt.Sprintf("%s at step %d of run %s", t.spec.Stage, t.spec.Step, t.spec.Run)
}

// init finds the committed record the transaction replaces and so the generation it commits.
func (t *Txn) init(ctx context.Context) error {
	t.once.Do(func() {
		if t.spec.Corpus != "" {
			return // each corpus partition has its own generation (corpusBase)
		}
		if err := ValidFragment(t.spec.Stage); err != nil {
			t.initErr = fmt.Errorf("lake: transaction: %w", err)
			return
		}
		heads, err := t.lk.recordHeads(ctx, t.spec.Run, commitStepPrefix(t.spec.Run, t.spec.Step)+t.spec.Stage+"/")
		if err != nil {
			t.initErr = err
			return
		}
		for _, h := range heads {
			if h.stage != t.spec.Stage {
				continue
			}
			rec, err := t.lk.readRecord(ctx, h.key)
			if err != nil {
				t.initErr = err
				return
			}
			t.prev, t.gen = rec, rec.Generation+1
		}
		if t.prev != nil && !t.spec.Force {
			t.initErr = fmt.Errorf("%w: %s committed step %d of run %s at %s after this writer started it; nothing of this writer was committed",
				ErrConcurrentWriter, t.prev.Writer, t.spec.Step, t.spec.Run, t.prev.CommittedAt)
		}
	})
	return t.initErr
}

// covers reports whether key lies in the transaction's scope: a partition of its run at its step, or a
// partition of its corpus.
func (t *Txn) covers(key PartitionKey) bool {
	if t.spec.Corpus != "" {
		return key.Corpus == t.spec.Corpus
	}
	return key.Corpus == "" && key.Run == t.spec.Run && key.Step == t.spec.Step
}

// corpusBase returns the generation a corpus scope writes key at: 0 for a partition not committed yet,
// else one above the committed manifest, which only Force may replace (ErrCommitted).
func (t *Txn) corpusBase(ctx context.Context, key PartitionKey) (int, error) {
	t.mu.Lock()
	base, seen := t.bases[key]
	t.mu.Unlock()
	if !seen {
		m, err := t.lk.corpusManifest(ctx, key)
		switch {
		case errors.Is(err, ErrNotCommitted):
		case err != nil:
			return 0, err
		case !t.spec.Force:
			return 0, fmt.Errorf("%w: %s (use --force to replace it)", ErrCommitted, key)
		default:
			base = m
		}
		t.mu.Lock()
		t.bases[key] = base
		t.mu.Unlock()
	}
	if base == nil {
		return 0, nil
	}
	return base.Generation + 1, nil
}

// txnWrite uploads one write's parts and records them; a second write of the same partition and shard
// replaces the first. With several shard processes it also updates this process's marker, and reports
// whether every process has written (the last one in commits).
func txnWrite[T any](ctx context.Context, t *Txn, key PartitionKey, version int, rows []T, opts WriteOptions) (WriteResult, error) {
	if err := t.init(ctx); err != nil {
		return WriteResult{}, err
	}
	gen := t.gen
	if t.spec.Corpus != "" {
		var err error
		if gen, err = t.corpusBase(ctx, key); err != nil {
			return WriteResult{}, err
		}
	}
	shards := max(opts.Shards, 1)
	files, err := encodeAndUpload(ctx, t.lk.store, key, gen, rows, opts, newWriterID())
	res := WriteResult{Generation: gen}
	t.mu.Lock()
	for _, f := range files {
		t.mine = append(t.mine, key.Dir()+"/"+f.Name)
		res.Rows += f.Rows
		res.Bytes += f.Bytes
	}
	t.mu.Unlock()
	if err != nil {
		return WriteResult{}, err
	}
	t.mu.Lock()
	if t.parts[key] == nil {
		t.parts[key] = map[int]pendingShard{}
	}
	t.parts[key][opts.Shard] = pendingShard{Table: key.Table, Fragment: key.Fragment, Shard: opts.Shard, Shards: shards, SchemaVersion: version, Files: files, gen: gen}
	t.mu.Unlock()
	if t.spec.Shards <= 1 {
		res.Committed = true
		return res, nil
	}
	if err := t.putMarker(ctx, false); err != nil {
		return res, err
	}
	markers, err := t.markers(ctx)
	res.Committed = err == nil && len(markers) == t.spec.Shards
	return res, err
}

func (t *Txn) marker(complete bool) txnMarker {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := txnMarker{Shard: t.spec.Shard, Shards: t.spec.Shards, Writer: t.writer, Complete: complete, Writes: []pendingShard{}}
	for _, byShard := range t.parts {
		for _, w := range byShard {
			m.Writes = append(m.Writes, w)
		}
	}
	sort.Slice(m.Writes, func(i, j int) bool {
		a, b := m.Writes[i], m.Writes[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Fragment != b.Fragment {
			return a.Fragment < b.Fragment
		}
		return a.Shard < b.Shard
	})
	return m
}

func (t *Txn) putMarker(ctx context.Context, complete bool) error {
	body, _ := json.Marshal(t.marker(complete))
	s := t.spec
	return t.lk.store.Put(ctx, txnMarkerKey(s.Run, s.Stage, s.Step, t.gen, s.Shard, s.Shards), body)
}

// markers reads every shard process's marker of this generation, by shard.
func (t *Txn) markers(ctx context.Context) (map[int]txnMarker, error) {
	s := t.spec
	objs, err := t.lk.store.List(ctx, txnShardDir(s.Run, s.Stage, s.Step, t.gen))
	if err != nil {
		return nil, err
	}
	out := map[int]txnMarker{}
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, shardMarkerSuffix(s.Shards)) {
			continue
		}
		body, err := ReadAll(ctx, t.lk.store, o.Key)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var m txnMarker
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("lake: corrupt shard marker %s: %v", o.Key, err)
		}
		out[m.Shard] = m
	}
	return out, nil
}

// Commit makes everything the transaction wrote visible with one conditional put of the stage's record,
// and reports whether this process committed it. A shard process commits only when every process's
// marker is complete (else it returns false and the last one in commits). A transaction that wrote
// nothing commits nothing. When another writer created the record first, Commit removes this process's
// parts and returns ErrConcurrentWriter; nothing of this writer is visible.
func (t *Txn) Commit(ctx context.Context) (bool, error) {
	t.mu.Lock()
	empty := len(t.parts) == 0
	t.mu.Unlock()
	if empty {
		return false, nil
	}
	if t.spec.Corpus != "" {
		return true, t.commitCorpus(ctx)
	}
	s := t.spec
	own := t.marker(true)
	markers := map[int]txnMarker{s.Shard: own}
	if s.Shards > 1 {
		if err := t.putMarker(ctx, true); err != nil {
			return false, err
		}
		listed, err := t.markers(ctx)
		if err != nil {
			return false, err
		}
		for shard, m := range listed {
			if !m.Complete {
				return false, nil // a sibling is still running: it commits when it is done
			}
			if shard != s.Shard {
				markers[shard] = m
			}
		}
		if len(markers) < s.Shards {
			return false, nil
		}
	}
	rec := t.record(ctx, markers)
	body, _ := json.MarshalIndent(rec, "", "  ")
	err := t.lk.store.PutIfAbsent(ctx, recordKey(s.Run, s.Stage, s.Step, t.gen), body)
	if errors.Is(err, ErrExists) {
		winner, rerr := t.lk.readRecord(ctx, recordKey(s.Run, s.Stage, s.Step, t.gen))
		if rerr != nil {
			return false, rerr
		}
		if s.Shards > 1 && winner.Shards == s.Shards {
			return false, nil // a sibling shard committed the same markers
		}
		t.Abort(ctx)
		return false, fmt.Errorf("%w: %s committed step %d of run %s (generation %d) at %s while this writer was running it; nothing of this writer was committed, and its parts are removed",
			ErrConcurrentWriter, winner.Writer, s.Step, s.Run, winner.Generation, winner.CommittedAt)
	}
	if err != nil {
		return false, err
	}
	t.lk.removeSuperseded(ctx, t.prev, rec)
	for _, p := range rec.Partitions {
		t.lk.removeUnreferenced(ctx, p.Key(s.Run, s.Step), p.Manifest.Files, t.gen)
	}
	return true, nil
}

// record builds the commit record from every process's marker. Where two processes wrote the same shard
// of a partition (a table every shard process writes whole), the lowest process's write is kept.
func (t *Txn) record(ctx context.Context, markers map[int]txnMarker) *Record {
	s := t.spec
	type id struct{ table, fragment string }
	writes := map[id]map[int]pendingShard{}
	procs := make([]int, 0, len(markers))
	for p := range markers {
		procs = append(procs, p)
	}
	sort.Ints(procs)
	for _, p := range procs {
		for _, w := range markers[p].Writes {
			k := id{w.Table, w.Fragment}
			if writes[k] == nil {
				writes[k] = map[int]pendingShard{}
			}
			if _, taken := writes[k][w.Shard]; !taken {
				writes[k][w.Shard] = w
			}
		}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	rec := &Record{Run: s.Run, Stage: s.Stage, Step: s.Step, Generation: t.gen, Shards: s.Shards,
		Partitions: []RecordPartition{}, Writer: writerLabel(t.writer), CommittedAt: now}
	for k, byShard := range writes {
		key := PartitionKey{Run: s.Run, Table: k.table, Step: s.Step, Fragment: k.fragment}
		man := Manifest{Table: k.table, Run: s.Run, Step: s.Step, Files: []FileEntry{}, Writer: rec.Writer, CommittedAt: now}
		for _, w := range byShard {
			man.SchemaVersion, man.Shards = w.SchemaVersion, max(man.Shards, w.Shards)
			for _, f := range w.Files {
				man.Files = append(man.Files, f)
				man.Rows += f.Rows
				man.Bytes += f.Bytes
			}
		}
		sort.Slice(man.Files, func(i, j int) bool { return man.Files[i].Name < man.Files[j].Name })
		// The partition's generation is above whatever record covers it now (this stage's, or another
		// writer's at the step), so the new record takes precedence.
		if cur, err := t.lk.Manifest(ctx, key); err == nil {
			man.Generation = cur.Generation + 1
		}
		rec.Partitions = append(rec.Partitions, RecordPartition{Table: k.table, Fragment: k.fragment, Manifest: man})
	}
	sort.Slice(rec.Partitions, func(i, j int) bool {
		a, b := rec.Partitions[i], rec.Partitions[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return a.Fragment < b.Fragment
	})
	return rec
}

// Abort removes every part file this process uploaded and its shard marker (best effort: what remains
// is invisible, and `spade lake vacuum` removes it).
func (t *Txn) Abort(ctx context.Context) {
	t.mu.Lock()
	mine := append([]string(nil), t.mine...)
	t.mu.Unlock()
	for _, k := range mine {
		t.lk.store.Delete(ctx, k)
	}
	if s := t.spec; s.Shards > 1 && t.initErr == nil {
		t.lk.store.Delete(ctx, txnMarkerKey(s.Run, s.Stage, s.Step, t.gen, s.Shard, s.Shards))
	}
}

// removeSuperseded deletes, after a commit, the part files of the replaced record that the new record
// does not list. Failures are ignored: garbage is invisible, and vacuum removes it.
func (l *Lake) removeSuperseded(ctx context.Context, prev, rec *Record) {
	if prev == nil {
		return
	}
	keep := map[string]bool{}
	for _, p := range rec.Partitions {
		for _, f := range p.Manifest.Files {
			keep[p.Key(rec.Run, rec.Step).Dir()+"/"+f.Name] = true
		}
	}
	for _, p := range prev.Partitions {
		for _, f := range p.Manifest.Files {
			if k := p.Key(prev.Run, prev.Step).Dir() + "/" + f.Name; !keep[k] {
				l.store.Delete(ctx, k)
			}
		}
	}
}
