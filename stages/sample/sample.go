package sample

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/spadekit/spade/internal/config"
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
	var err error
	var docs []schemas.CorpusRow
	if !cfg.Ablation.NoCorpus {
		docs, err = lake.ReadRows[schemas.CorpusRow](ctx, lk, lake.CorpusKey(cfg.Sample.Corpus))
		if errors.Is(err, lake.ErrNotCommitted) {
			return Result{}, fmt.Errorf("sample: corpus %q is not imported in %s (run `spade corpus import --name %s FILE`, or set sample.corpus)", cfg.Sample.Corpus, lk.URI(), cfg.Sample.Corpus)
		}
		if err != nil {
			return Result{}, fmt.Errorf("sample: read corpus %q: %w", cfg.Sample.Corpus, err)
		}
		if len(docs) == 0 {
			return Result{}, fmt.Errorf("sample: corpus %q is empty", cfg.Sample.Corpus)
		}
	}
	used, err := usedDocs(ctx, lk, run, step)
	if err != nil {
		return Result{}, err
	}
	all, _ := Draw(cfg, step, docs, used)
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
	wopts := lake.WriteOptions{Shard: env.Shard.Index, Shards: shards, Force: env.Force}
	if _, err := lake.WriteRows(ctx, lk, key, rows, wopts); err != nil {
		return Result{}, fmt.Errorf("sample: %w", err)
	}
	log.Info("sample: committed", "run", run, "step", step, "slots", len(rows), "reused", reused)
	return Result{Rows: len(rows), Reused: reused}, nil
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

// Draw computes the slots of a refresh step: each slot's skill (tool_use in the tools setting) and a
// document not in used, suited to the skill (see suits), the lowest drawKey first. When no unused suited
// document is left it reuses one (the lowest drawKey among suited, then any) and marks the row Reused;
// it returns the rows and the number reused. With ablation.no_corpus, or no documents, slots get none.
func Draw(cfg *config.Config, step int64, docs []schemas.CorpusRow, used map[string]bool) ([]schemas.SampleRow, int) {
	window := cfg.PoolIndex(step)
	active := []string{schemas.SkillToolUse}
	if cfg.Setting != schemas.SettingTools {
		active = ActiveSkills(cfg.Seed, window, cfg.Sample.SkillsPerWindow)
	}
	sorted := append([]schemas.CorpusRow(nil), docs...)
	sort.Slice(sorted, func(i, j int) bool {
		return drawKey(cfg.Seed, step, sorted[i].DocID) < drawKey(cfg.Seed, step, sorted[j].DocID)
	})
	taken := map[string]bool{}
	for id := range used {
		taken[id] = true
	}
	rows := make([]schemas.SampleRow, cfg.Sample.EnvsPerStep)
	reused := 0
	for slot := range rows {
		skill := SlotSkill(active, slot)
		row := schemas.SampleRow{Step: step, Slot: int32(slot), Skill: skill, Setting: cfg.Setting}
		if !cfg.Ablation.NoCorpus && len(sorted) > 0 {
			doc, again := pick(sorted, skill, taken)
			taken[doc.DocID] = true
			row.DocID = doc.DocID
			row.Excerpt = Excerpt(doc.Text, cfg.Sample.ExcerptChars)
			row.Reused = again
			if again {
				reused++
			}
		}
		rows[slot] = row
	}
	return rows, reused
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

// Excerpt cuts a document to at most maxChars characters (runes), at the last paragraph or sentence
// break in the final fifth when there is one, else at a space, else hard. maxChars ≤ 0 keeps it whole.
func Excerpt(text string, maxChars int) string {
	if maxChars <= 0 || utf8.RuneCountInString(text) <= maxChars {
		return text
	}
	cut := 0
	for i := range text {
		if maxChars == 0 {
			cut = i
			break
		}
		maxChars--
	}
	head := text[:cut]
	floor := len(head) * 4 / 5
	for _, sep := range []string{"\n\n", ". ", "\n", " "} {
		if i := strings.LastIndex(head, sep); i >= floor {
			return strings.TrimRight(head[:i+len(sep)], " \n")
		}
	}
	return head
}
