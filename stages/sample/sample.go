package sample

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/corpus"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Stage is the sample stage as the stage contract runs it (stage.Execute).
type Stage struct{}

// Name is "sample".
func (Stage) Name() stage.Name { return stage.Sample }

// Reads lists nothing: the corpus is imported, not written by a stage (a missing one gets its own message).
func (Stage) Reads() []stage.Input { return nil }

// Writes is samples.
func (Stage) Writes() []string { return []string{schemas.SamplesSpec.Name} }

// Due is true at pool refresh steps.
func (Stage) Due(cfg *config.Config, step int64) bool { return stage.RefreshDue(cfg, step) }

// Run draws the step's slots and returns the closing line.
func (Stage) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	res, err := Run(ctx, env, step)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d slots (%d reused documents)", res.Rows, res.Reused), nil
}

// Result reports what the stage did.
type Result struct {
	// Rows is the number of slots written (by this shard).
	Rows int
	// Reused counts slots that had to reuse a document because the corpus was exhausted.
	Reused int
}

// Run draws the slots of refresh step `step` and commits them as the `samples` partition (this shard's
// slots, slot mod shards = shard: every process draws the whole step, since a draw is a function of the
// seed, the step and the documents used before, so they agree; the partition commits when all are in).
// It is called through stage.Execute, which checks the step, the shard and that the step is a refresh.
func Run(ctx context.Context, env *stage.Env, step int64) (Result, error) {
	log, cfg, lk, run := env.Logger(), env.Config, env.Lake, env.Run
	shards := env.Shard.Shards()
	docs, err := readCorpus(ctx, env)
	if err != nil {
		return Result{}, err
	}
	used, err := usedDocs(ctx, lk, run, step)
	if err != nil {
		return Result{}, err
	}
	all, _, err := Draw(cfg, step, docs, used)
	if err != nil {
		return Result{}, err
	}
	var rows []schemas.SampleRow
	reused := 0
	for _, r := range all {
		if int(r.Slot)%shards == env.Shard.Index {
			rows = append(rows, r)
			if r.Reused {
				reused++
			}
		}
	}
	if reused > 0 {
		log.Warn("sample: corpus exhausted, reusing documents", "corpus", cfg.Sample.Corpus, "step", step, "reused", reused)
	}
	key := lake.PartitionKey{Run: run, Table: schemas.SamplesSpec.Name, Step: step}
	wopts := lake.WriteOptions{Shard: env.Shard.Index, Shards: shards}
	if _, err := lake.WriteRows(ctx, env.Txn, key, rows, wopts); err != nil {
		return Result{}, fmt.Errorf("sample: %w", err)
	}
	log.Info("sample: committed", "run", run, "step", step, "slots", len(rows), "reused", reused)
	return Result{Rows: len(rows), Reused: reused}, nil
}

// readCorpus returns the run's corpus (sample.corpus), or nothing under ablation.no_corpus; a corpus that
// is not imported is an error saying how to import it.
func readCorpus(ctx context.Context, env *stage.Env) ([]schemas.CorpusRow, error) {
	cfg, lk := env.Config, env.Lake
	if cfg.Ablation.NoCorpus {
		return nil, nil
	}
	docs, err := lake.ReadRows[schemas.CorpusRow](ctx, lk, lake.CorpusKey(cfg.Sample.Corpus))
	if errors.Is(err, lake.ErrNotCommitted) {
		return nil, fmt.Errorf("sample: corpus %q is not imported in %s (run `%s FILE`, or set sample.corpus)", cfg.Sample.Corpus, lk.URI(), lk.Command("corpus", "import", "--name", cfg.Sample.Corpus))
	}
	if err != nil {
		return nil, fmt.Errorf("sample: read corpus %q: %w", cfg.Sample.Corpus, err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("sample: corpus %q is empty", cfg.Sample.Corpus)
	}
	return docs, nil
}

// usedDocs returns the documents drawn by the run's samples partitions before step.
func usedDocs(ctx context.Context, lk *lake.Lake, run string, step int64) (map[string]bool, error) {
	steps, err := lk.Steps(ctx, run, schemas.SamplesSpec.Name)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, s := range steps {
		if s >= step {
			continue
		}
		rows, err := lake.ReadRows[schemas.SampleRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.SamplesSpec.Name, Step: s})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.DocID != "" {
				used[r.DocID] = true
			}
		}
	}
	return used, nil
}

// Draw computes the slots of a refresh step: each slot's skill (WindowSkills, spread by SlotSkill) and a
// document not in used, drawn by sample.doc_draw (see Drawer); it returns the rows and the number that
// had to reuse a document because none was left. With ablation.no_corpus, or no documents, slots get none.
func Draw(cfg *config.Config, step int64, docs []schemas.CorpusRow, used map[string]bool) ([]schemas.SampleRow, int, error) {
	d, err := NewDrawer(cfg, step, docs, used)
	if err != nil {
		return nil, 0, err
	}
	rows := d.Rows()
	reused := 0
	for _, r := range rows {
		if r.Reused {
			reused++
		}
	}
	return rows, reused, nil
}

// Drawer holds one refresh step's draw: its slots (Rows) and, for the gate's regenerations, a fresh
// document for any later attempt of a slot (Attempt). Everything is a function of the run seed, the step,
// the corpus and the documents used before the step, so every process computes the same draw.
type Drawer struct {
	cfg    *config.Config
	step   int64
	active []string
	// order is every document, lowest drawKey(seed, step, id) first: a seeded uniform permutation.
	order []schemas.CorpusRow
	used  map[string]bool
	rows  []schemas.SampleRow
}

// NewDrawer draws the slots of refresh step `step` from docs, leaving out the documents in used (those of
// the run's earlier samples). sample.doc_draw picks the rule: replacement takes, for each slot,
// corpus.DrawWithReplacement's document (documents may repeat, within the step and across steps; a
// repeat of an earlier step's is marked Reused); uniform takes the unused documents in the
// step's seeded order (the authors' uniform draw, without replacement); matched takes, for each slot, the
// unused document whose domain suits the slot's skill best (see suits), then the lowest key. Once no
// unused document is left a slot reuses one (lowest key first, a document not yet taken at this step
// before one that is) and its row is marked Reused.
func NewDrawer(cfg *config.Config, step int64, docs []schemas.CorpusRow, used map[string]bool) (*Drawer, error) {
	active, err := WindowSkills(cfg, step)
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	d := &Drawer{cfg: cfg, step: step, active: active, used: used}
	if !cfg.Ablation.NoCorpus {
		d.order = append([]schemas.CorpusRow(nil), docs...)
		sort.Slice(d.order, func(i, j int) bool {
			return drawKey(cfg.Seed, step, d.order[i].DocID) < drawKey(cfg.Seed, step, d.order[j].DocID)
		})
	}
	taken := map[string]bool{}
	for id := range used {
		taken[id] = true
	}
	thisStep := map[string]bool{}
	d.rows = make([]schemas.SampleRow, cfg.Sample.EnvsPerStep)
	for slot := range d.rows {
		row := d.slotRow(slot)
		if len(d.order) > 0 {
			var doc schemas.CorpusRow
			switch cfg.Sample.DocDraw {
			case config.DocReplacement:
				doc = corpus.DrawWithReplacement(d.order, cfg.Seed, step, int32(slot), 1)
				row.Reused = taken[doc.DocID]
			case config.DocUniform:
				doc, row.Reused = pickUniform(d.order, taken, thisStep)
			default:
				doc, row.Reused = pick(d.order, row.Skill, taken)
			}
			taken[doc.DocID], thisStep[doc.DocID] = true, true
			d.setDoc(&row, doc)
		}
		d.rows[slot] = row
	}
	return d, nil
}

// LoadDrawer reads the run's corpus (sample.corpus; none under ablation.no_corpus) and the documents its
// samples used before step, and returns the step's Drawer. No other package calls it: the generate
// stage, which cannot import a stage, draws a resampled attempt's document with its own rule
// (stages/generate/docdraw.go); one shared draw in an internal package would serve both.
func LoadDrawer(ctx context.Context, env *stage.Env, step int64) (*Drawer, error) {
	docs, err := readCorpus(ctx, env)
	if err != nil {
		return nil, err
	}
	used, err := usedDocs(ctx, env.Lake, env.Run, step)
	if err != nil {
		return nil, err
	}
	return NewDrawer(env.Config, step, docs, used)
}

// Rows returns the step's slots, slot order.
func (d *Drawer) Rows() []schemas.SampleRow { return append([]schemas.SampleRow(nil), d.rows...) }

// Attempt returns the sample of attempt `attempt` (1-based) of slot `slot`: attempt 1 is the slot's own
// row (Rows); every later attempt gets a fresh document (the authors draw one per attempt), a function of
// (seed, step, slot, attempt) alone. Under replacement it is corpus.DrawWithReplacement's, from the whole
// corpus. Otherwise it is never one of the documents used before the step or drawn for the step's
// slots: under uniform, attempt a of slot s takes position (a−1)·n + s of the step's unused
// documents (n = sample.envs_per_step), so no two (slot, attempt) pairs share a document while the corpus
// lasts; under matched, position (a−2)·m + j of the unused documents suited to the slot's skill that no
// slot took (m slots have the skill, the slot is the j-th of them), distinct within a skill. Past the end
// of the corpus the document is a reused one (Reused set). The skill and setting never change.
func (d *Drawer) Attempt(slot, attempt int) (schemas.SampleRow, error) {
	if slot < 0 || slot >= len(d.rows) {
		return schemas.SampleRow{}, fmt.Errorf("sample: slot %d out of range 0..%d", slot, len(d.rows)-1)
	}
	if attempt < 1 {
		return schemas.SampleRow{}, fmt.Errorf("sample: attempt %d: attempts count from 1", attempt)
	}
	if attempt == 1 || len(d.order) == 0 {
		return d.rows[slot], nil
	}
	row := d.slotRow(slot)
	if d.cfg.Sample.DocDraw == config.DocReplacement {
		doc := corpus.DrawWithReplacement(d.order, d.cfg.Seed, d.step, int32(slot), int32(attempt))
		row.Reused = d.used[doc.DocID]
		d.setDoc(&row, doc)
		return row, nil
	}
	if d.cfg.Sample.DocDraw == config.DocUniform {
		var fresh []schemas.CorpusRow
		for _, doc := range d.order {
			if !d.used[doc.DocID] {
				fresh = append(fresh, doc)
			}
		}
		pos := (attempt-1)*len(d.rows) + slot
		if pos < len(fresh) {
			d.setDoc(&row, fresh[pos])
		} else {
			d.setDoc(&row, d.order[pos%len(d.order)])
			row.Reused = true
		}
		return row, nil
	}
	taken := map[string]bool{}
	for _, r := range d.rows {
		taken[r.DocID] = true
	}
	var fresh, suited []schemas.CorpusRow
	for _, doc := range d.order {
		if suits(row.Skill, doc.Domain) < 0 {
			continue
		}
		suited = append(suited, doc)
		if !d.used[doc.DocID] && !taken[doc.DocID] {
			fresh = append(fresh, doc)
		}
	}
	sort.SliceStable(fresh, func(i, j int) bool { return suits(row.Skill, fresh[i].Domain) < suits(row.Skill, fresh[j].Domain) })
	k := len(d.active)
	same := (len(d.rows) - slot%k + k - 1) / k // slots with this slot's skill
	pos := (attempt-2)*same + slot/k
	switch {
	case pos < len(fresh):
		d.setDoc(&row, fresh[pos])
	case len(suited) > 0:
		d.setDoc(&row, suited[pos%len(suited)])
		row.Reused = true
	default:
		d.setDoc(&row, d.order[pos%len(d.order)])
		row.Reused = true
	}
	return row, nil
}

// slotRow is the slot's row without a document.
func (d *Drawer) slotRow(slot int) schemas.SampleRow {
	return schemas.SampleRow{Step: d.step, Slot: int32(slot), Skill: SlotSkill(d.active, slot), Setting: d.cfg.Setting}
}

// setDoc puts doc and its excerpt (sample.excerpt_words cut as sample.excerpt_cut says, then
// sample.excerpt_chars) in row.
func (d *Drawer) setDoc(row *schemas.SampleRow, doc schemas.CorpusRow) {
	row.DocID = doc.DocID
	row.Excerpt = corpus.Cut(doc.Text, d.cfg.Sample.ExcerptChars, d.cfg.Sample.ExcerptWords, d.cfg.Sample.ExcerptCut == config.ExcerptMarked)
}

// pick returns the best unused suited document (best domain rank, then draw order), else a reused one.
func pick(sorted []schemas.CorpusRow, skill string, taken map[string]bool) (schemas.CorpusRow, bool) {
	best, bestRank := -1, 1<<30
	for i, d := range sorted {
		rank := suits(skill, d.Domain)
		if rank < 0 || taken[d.DocID] {
			continue
		}
		if rank < bestRank {
			best, bestRank = i, rank
		}
	}
	if best >= 0 {
		return sorted[best], false
	}
	for _, d := range sorted {
		if suits(skill, d.Domain) >= 0 {
			return d, true
		}
	}
	return sorted[0], true
}

// pickUniform returns the first document of the step's order not taken (not used before the step nor
// drawn for an earlier slot); once none is left, a reused one: the first not yet drawn at this step, else
// the first.
func pickUniform(order []schemas.CorpusRow, taken, thisStep map[string]bool) (schemas.CorpusRow, bool) {
	for _, d := range order {
		if !taken[d.DocID] {
			return d, false
		}
	}
	for _, d := range order {
		if !thisStep[d.DocID] {
			return d, true
		}
	}
	return order[0], true
}
