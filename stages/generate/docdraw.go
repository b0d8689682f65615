package generate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/corpus"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// docDraw is the document order resampled attempts of one refresh step draw from.
type docDraw struct {
	unused []schemas.CorpusRow // documents the run has not used, in draw order
	all    []schemas.CorpusRow // every document of the corpus, in draw order
}

// ResampleKey orders a corpus for the resampled attempts of a refresh step: SHA-256(seed, step,
// doc_id) in hex.
func ResampleKey(seed, step int64, docID string) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "resample\x00%d\x00%d\x00%s", seed, step, docID))
	return hex.EncodeToString(sum[:])
}

// ResampleIndex is the position in the step's unused documents that attempt `attempt` (≥ 2) of slot
// `slot` takes: (attempt − 2) · slots + slot, so no two attempts of a step share a document.
func ResampleIndex(slot, attempt int32, slots int) int {
	return int(attempt-2)*slots + int(slot)
}

// resampleDoc returns the document (id and excerpt) of a resampled attempt (generate.regen = resample;
// the authors draw a fresh document for every attempt). Under sample.doc_draw replacement it is
// corpus.DrawWithReplacement's, as the sample stage draws attempt 1. Otherwise the draw rule: the run's corpus
// (sample.corpus) ordered by ResampleKey(seed, step, doc_id); the unused documents are those that no
// samples partition of the run at or before the step and no candidate of an earlier step holds; attempt
// a of slot s takes the unused document at ResampleIndex(s, a, slots) (slots: the step's sample count),
// and once that runs past the unused ones, the document at that index modulo the corpus size (a reuse).
// The choice depends only on (seed, step, slot, attempt) and committed tables, never on scheduling, so a
// re-run or a replay draws the same. The excerpt is cut by sample.excerpt_words and sample.excerpt_chars
// (corpus.Cut). Under ablation.no_corpus there is no document.
func (g *Generator) resampleDoc(ctx context.Context, step int64, slot, attempt int32) (docID, excerpt string, err error) {
	if g.cfg.Ablation.NoCorpus {
		return "", "", nil
	}
	draw, err := g.docDraw(ctx, step)
	if err != nil {
		return "", "", err
	}
	cut := func(doc schemas.CorpusRow) string {
		return corpus.Cut(doc.Text, g.cfg.Sample.ExcerptChars, g.cfg.Sample.ExcerptWords, g.cfg.Sample.ExcerptCut == config.ExcerptMarked)
	}
	if g.cfg.Sample.DocDraw == config.DocReplacement {
		doc := corpus.DrawWithReplacement(draw.all, g.cfg.Seed, step, slot, attempt)
		return doc.DocID, cut(doc), nil
	}
	samples, err := g.slotSamples(ctx, step)
	if err != nil {
		return "", "", err
	}
	k := ResampleIndex(slot, attempt, len(samples))
	doc := draw.all[k%len(draw.all)]
	if k < len(draw.unused) {
		doc = draw.unused[k]
	} else {
		g.log.Warn("generate: corpus exhausted, a resampled attempt reuses a document", "step", step, "slot", slot, "attempt", attempt, "doc", doc.DocID)
	}
	return doc.DocID, cut(doc), nil
}

// docDraw reads (once per step) the corpus and the documents the run used, and orders them.
func (g *Generator) docDraw(ctx context.Context, step int64) (*docDraw, error) {
	g.mu.Lock()
	cached := g.draws[step]
	g.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	docs, err := lake.ReadRows[schemas.CorpusRow](ctx, g.lk, lake.CorpusKey(g.cfg.Sample.Corpus))
	if errors.Is(err, lake.ErrNotCommitted) || (err == nil && len(docs) == 0) {
		return nil, fmt.Errorf("generate: generate.regen = resample draws a fresh document, and corpus %q is not imported or is empty (run `%s FILE`)", g.cfg.Sample.Corpus, g.lk.Command("corpus", "import", "--name", g.cfg.Sample.Corpus))
	}
	if err != nil {
		return nil, fmt.Errorf("generate: read corpus %q: %w", g.cfg.Sample.Corpus, err)
	}
	used := map[string]bool{}
	steps, err := g.lk.Steps(ctx, g.run, schemas.SamplesSpec.Name)
	if err != nil {
		return nil, err
	}
	for _, s := range steps {
		if s > step {
			continue
		}
		rows, err := lake.ReadRows[schemas.SampleRow](ctx, g.lk, lake.PartitionKey{Run: g.run, Table: schemas.SamplesSpec.Name, Step: s})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			used[r.DocID] = true
		}
	}
	steps, err = g.lk.Steps(ctx, g.run, schemas.CandidatesSpec.Name)
	if err != nil {
		return nil, err
	}
	for _, s := range steps {
		if s >= step {
			continue
		}
		rows, err := lake.ReadStep[schemas.CandidateRow](ctx, g.lk, g.run, schemas.CandidatesSpec.Name, s)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			used[r.DocID] = true
		}
	}
	keys := make(map[string]string, len(docs))
	for _, d := range docs {
		keys[d.DocID] = ResampleKey(g.cfg.Seed, step, d.DocID)
	}
	sort.Slice(docs, func(i, j int) bool { return keys[docs[i].DocID] < keys[docs[j].DocID] })
	draw := &docDraw{all: docs}
	for _, d := range docs {
		if !used[d.DocID] {
			draw.unused = append(draw.unused, d)
		}
	}
	g.mu.Lock()
	g.draws[step] = draw
	g.mu.Unlock()
	return draw, nil
}
