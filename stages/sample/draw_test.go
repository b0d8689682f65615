package sample_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	icorpus "github.com/spadekit/spade/internal/corpus"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/sample"
	"github.com/spadekit/spade/stages/stage"
)

// The seeded order draws each window's skills from the run seed (ActiveSkills); round_robin walks
// sample.skills in its own order, skills_per_window at a time, wrapping (the authors' rotation).
func TestWindowSkills(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Sample.RefreshEvery = 4
	for w := int64(0); w < 8; w++ {
		got, err := sample.WindowSkills(cfg, 4*w)
		if err != nil {
			t.Fatal(err)
		}
		if want := sample.ActiveSkills(cfg.Seed, w, 3); !reflect.DeepEqual(got, want) {
			t.Fatalf("seeded window %d: %v, want %v", w, got, want)
		}
	}
	cfg.Sample.SkillOrder = config.SkillsRoundRobin
	want := [][]string{schemas.Skills[:3], schemas.Skills[3:], schemas.Skills[:3]}
	for w, skills := range want {
		if got, _ := sample.WindowSkills(cfg, int64(4*w+3)); !reflect.DeepEqual(got, skills) {
			t.Fatalf("round_robin window %d: %v, want %v", w, got, skills)
		}
	}
	cfg.Sample.Skills = "causal_inference, math_reasoning, optimization, logical_deduction"
	want = [][]string{
		{schemas.SkillCausal, schemas.SkillMath, schemas.SkillOptimize},
		{schemas.SkillLogic, schemas.SkillCausal, schemas.SkillMath},
		{schemas.SkillOptimize, schemas.SkillLogic, schemas.SkillCausal},
	}
	for w, skills := range want {
		if got, _ := sample.WindowSkills(cfg, int64(4*w)); !reflect.DeepEqual(got, skills) {
			t.Fatalf("round_robin over 4 skills, window %d: %v, want %v", w, got, skills)
		}
	}
	cfg.Sample.Skills = "optimization"
	if _, err := sample.WindowSkills(cfg, 0); err == nil || !strings.Contains(err.Error(), "sample.skills_per_window") {
		t.Fatalf("3 per window of 1 skill: %v", err)
	}
}

// The two-skill ablation: every slot of every pool is one of the two listed skills, half each.
func TestTwoSkillAllowlist(t *testing.T) {
	for _, order := range config.SkillOrderValues() {
		cfg := smallConfig(t)
		cfg.Sample.Skills, cfg.Sample.SkillsPerWindow, cfg.Sample.SkillOrder = "logical_deduction,spatial_reasoning", 2, order
		docs := corpus(100, func(int) string { return "" })
		for step := int64(0); step < 40; step += 4 {
			rows, _, err := sample.Draw(cfg, step, docs, nil)
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, r := range rows {
				count[r.Skill]++
			}
			if len(count) != 2 || count[schemas.SkillLogic] != 3 || count[schemas.SkillSpatial] != 3 {
				t.Fatalf("%s step %d: %v", order, step, count)
			}
		}
	}
}

// doc_draw = uniform ignores domains, never repeats a document within the run's unused set, is a function
// of the seed and the step, and spreads over the corpus.
func TestUniformDraw(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Sample.DocDraw = config.DocUniform
	docs := corpus(12, func(i int) string { return []string{"math", "code", "science"}[i%3] })
	hits := map[string]int{}
	domains := map[string]bool{}
	for step := int64(0); step < 600; step += 4 {
		rows, reused, err := sample.Draw(cfg, step, docs, map[string]bool{"d000": true, "d001": true})
		if err != nil || reused != 0 {
			t.Fatalf("step %d: reused %d, %v", step, reused, err)
		}
		again, _, _ := sample.Draw(cfg, step, docs, map[string]bool{"d000": true, "d001": true})
		if !reflect.DeepEqual(rows, again) {
			t.Fatal("the draw is not reproducible")
		}
		seen := map[string]bool{}
		for _, r := range rows {
			if r.DocID == "d000" || r.DocID == "d001" || seen[r.DocID] {
				t.Fatalf("step %d draws %s again", step, r.DocID)
			}
			seen[r.DocID] = true
			hits[r.DocID]++
			domains[docs[mustIndex(t, r.DocID)].Domain] = true
		}
	}
	// 150 steps × 6 slots over 10 documents: 90 each on average.
	for id, n := range hits {
		if n < 60 || n > 120 {
			t.Fatalf("document %s drawn %d times of 900: not uniform (%v)", id, n, hits)
		}
	}
	if len(hits) != 10 || !domains["code"] {
		t.Fatalf("uniform draw reached %d documents, domains %v", len(hits), domains)
	}
	// Exhausted: the step reuses documents, marked, distinct while it can.
	rows, reused, _ := sample.Draw(cfg, 0, docs[:8], map[string]bool{"d000": true, "d001": true, "d002": true, "d003": true})
	if reused != 2 || rows[4].Reused != true || rows[5].DocID == rows[4].DocID {
		t.Fatalf("exhausted corpus: reused %d, %+v", reused, rows)
	}
}

func mustIndex(t *testing.T, id string) int {
	var i int
	if _, err := fmt.Sscanf(id, "d%03d", &i); err != nil {
		t.Fatal(err)
	}
	return i
}

func TestExcerptWords(t *testing.T) {
	cases := []struct {
		text string
		max  int
		want string
	}{
		{"one two three", 0, "one two three"},
		{"one two three", 3, "one two three"},
		{"one two three", 2, "one two"},
		{"  one\n\ntwo  three four", 2, "  one\n\ntwo"},
		{"a\tb", 1, "a"},
	}
	for _, tc := range cases {
		if got := icorpus.Excerpt(tc.text, 0, tc.max); got != tc.want {
			t.Errorf("ExcerptWords(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
		}
	}
	// Both cuts: the word cut, then the character cut.
	cfg := smallConfig(t)
	cfg.Sample.ExcerptWords, cfg.Sample.ExcerptChars = 50, 30
	long := []schemas.CorpusRow{{DocID: "long", Text: strings.Repeat("word ", 100)}}
	rows, _, _ := sample.Draw(cfg, 0, long, nil)
	if len(rows[0].Excerpt) > 30 {
		t.Fatalf("excerpt %d chars, want ≤ 30", len(rows[0].Excerpt))
	}
	cfg.Sample.ExcerptChars, cfg.Sample.ExcerptCut = 0, config.ExcerptPlain
	rows, _, _ = sample.Draw(cfg, 0, long, nil)
	if n := len(strings.Fields(rows[0].Excerpt)); n != 50 {
		t.Fatalf("excerpt has %d words, want 50", n)
	}
	cfg.Sample.ExcerptCut = config.ExcerptMarked // the presets': the words, then the marker line
	rows, _, _ = sample.Draw(cfg, 0, long, nil)
	if want := strings.TrimSpace(strings.Repeat("word ", 50)) + "\n[Document truncated at ~50 words]"; rows[0].Excerpt != want {
		t.Fatalf("marked excerpt %q, want %q", rows[0].Excerpt, want)
	}
}

// A regeneration attempt gets a fresh document: a function of (step, slot, attempt), attempt 1 being
// the slot's own row, never a document used before the step or drawn for a slot, and (uniform) no two
// pairs sharing one while the corpus lasts.
func TestAttemptDrawsAFreshDocument(t *testing.T) {
	for _, draw := range config.DocDrawValues() {
		if draw == config.DocReplacement {
			continue // documents repeat by design: TestReplacementDrawsEveryAttemptFromTheWholeCorpus
		}
		cfg := smallConfig(t)
		cfg.Sample.DocDraw = draw
		docs := corpus(200, func(i int) string { return []string{"math", "science", ""}[i%3] })
		used := map[string]bool{"d010": true, "d020": true, "d030": true}
		d, err := sample.NewDrawer(cfg, 8, docs, used)
		if err != nil {
			t.Fatal(err)
		}
		slotDocs := map[string]bool{}
		for _, r := range d.Rows() {
			slotDocs[r.DocID] = true
		}
		seen := map[string]string{}
		for slot := range 6 {
			first, _ := d.Attempt(slot, 1)
			if !reflect.DeepEqual(first, d.Rows()[slot]) {
				t.Fatalf("%s: attempt 1 of slot %d is not its row", draw, slot)
			}
			for attempt := 2; attempt <= 6; attempt++ {
				row, err := d.Attempt(slot, attempt)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := sample.NewDrawer(cfg, 8, docs, used)
				if row2, _ := again.Attempt(slot, attempt); !reflect.DeepEqual(row, row2) {
					t.Fatalf("%s: slot %d attempt %d is not reproducible", draw, slot, attempt)
				}
				if row.Reused || used[row.DocID] || slotDocs[row.DocID] || row.Skill != d.Rows()[slot].Skill || row.Excerpt == "" {
					t.Fatalf("%s: slot %d attempt %d: %+v", draw, slot, attempt, row)
				}
				if other, dup := seen[row.DocID]; dup && (draw == config.DocUniform || strings.HasPrefix(other, row.Skill)) {
					t.Fatalf("%s: slot %d attempt %d draws %s again (%s)", draw, slot, attempt, row.DocID, other)
				}
				seen[row.DocID] = fmt.Sprintf("%s slot %d attempt %d", row.Skill, slot, attempt)
			}
		}
		if _, err := d.Attempt(6, 2); err == nil {
			t.Fatalf("%s: slot 6 of 6 accepted", draw)
		}
	}
	// Past the corpus's end an attempt reuses a document and says so.
	cfg := smallConfig(t)
	cfg.Sample.DocDraw = config.DocUniform
	d, _ := sample.NewDrawer(cfg, 0, corpus(8, func(int) string { return "" }), nil)
	if row, _ := d.Attempt(5, 2); !row.Reused || row.DocID == "" {
		t.Fatalf("exhausted attempt: %+v", row)
	}
	if row, _ := d.Attempt(1, 2); row.Reused || slices.ContainsFunc(d.Rows(), func(r schemas.SampleRow) bool { return r.DocID == row.DocID }) {
		t.Fatalf("attempt 2 of slot 1 with 2 documents left: %+v", row)
	}
}

// LoadDrawer reads the corpus and the run's earlier samples itself.
func TestLoadDrawerLeavesOutEarlierSamples(t *testing.T) {
	ctx := context.Background()
	cfg := smallConfig(t)
	cfg.Sample.DocDraw = config.DocUniform
	lk, run := newRun(t, cfg, corpus(30, func(int) string { return "" }))
	if _, err := stage.Within(ctx, mustEnv(t, lk, run, nil), stage.Sample, 0, sample.Run); err != nil {
		t.Fatal(err)
	}
	first, err := lake.ReadRows[schemas.SampleRow](ctx, lk, lake.PartitionKey{Run: run, Table: "samples", Step: 0})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sample.LoadDrawer(ctx, mustEnv(t, lk, run, nil), 4)
	if err != nil {
		t.Fatal(err)
	}
	for slot := range 6 {
		for attempt := 1; attempt <= 3; attempt++ {
			row, _ := d.Attempt(slot, attempt)
			if slices.ContainsFunc(first, func(r schemas.SampleRow) bool { return r.DocID == row.DocID }) {
				t.Fatalf("step 4 slot %d attempt %d reuses step 0's %s", slot, attempt, row.DocID)
			}
		}
	}
}

// Under the presets' sample.doc_draw replacement, every slot and every attempt draws from the whole
// corpus (icorpus.DrawWithReplacement), so documents used before the step may come back and a step's
// slots may share one; attempt 1 is the slot's row, and a draw is reproducible.
func TestReplacementDrawsEveryAttemptFromTheWholeCorpus(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Sample.DocDraw = config.DocReplacement
	docs := corpus(3, func(int) string { return "" })
	used := map[string]bool{"d000": true, "d001": true, "d002": true}
	d, err := sample.NewDrawer(cfg, 8, docs, used)
	if err != nil {
		t.Fatal(err)
	}
	rows := d.Rows()
	if len(rows) <= len(docs) {
		t.Fatalf("%d slots, want more than the %d documents", len(rows), len(docs))
	}
	for slot, r := range rows {
		want := icorpus.DrawWithReplacement(docs, cfg.Seed, 8, int32(slot), 1)
		if r.DocID != want.DocID || !r.Reused {
			t.Errorf("slot %d drew %s (reused %v), want %s, marked reused (every document was used before)", slot, r.DocID, r.Reused, want.DocID)
		}
		for attempt := 2; attempt <= 4; attempt++ {
			row, err := d.Attempt(slot, attempt)
			if err != nil {
				t.Fatal(err)
			}
			if want := icorpus.DrawWithReplacement(docs, cfg.Seed, 8, int32(slot), int32(attempt)); row.DocID != want.DocID {
				t.Errorf("slot %d attempt %d drew %s, want %s", slot, attempt, row.DocID, want.DocID)
			}
		}
	}
}
