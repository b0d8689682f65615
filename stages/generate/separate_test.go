package generate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/corpus"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/stage"
)

// Every template renders with every setting's data: inline and separate, with and without a corpus,
// both action formats, with memory and a repair section or without; the separate templates ask for no
// hint and carry the authors' elements.
func TestEveryTemplateRendersEverySetting(t *testing.T) {
	memory := []schemas.MemoryRow{
		{Position: 0, EnvID: "e1", Regret: 0.4, Label: schemas.LabelSeed, Code: "class A: SEEDCODE"},
		{Position: 1, EnvID: "e2", SolveRate: 1, Label: schemas.LabelTooEasy, Code: "class B: EASYCODE"},
		{Position: 2, EnvID: "e3", Label: schemas.LabelTooHard, Code: "class C: HARDCODE"},
	}
	names := map[string]bool{}
	for _, setting := range []string{"games", "tools"} {
		skill := schemas.SkillToolUse
		if setting == "games" {
			skill = schemas.SkillSpatial
		}
		for i := range memory {
			memory[i].Skill = skill
		}
		for _, mode := range config.HintModeValues() {
			for _, noCorpus := range []bool{false, true} {
				spec := generate.PromptSpec{Setting: setting, HintMode: mode, NoCorpus: noCorpus}
				names[spec.TemplateName()] = true
				tmpl, err := generate.LoadTemplate(spec, "")
				if err != nil {
					t.Fatal(err)
				}
				for _, format := range config.ActionFormatValues() {
					for _, full := range []bool{false, true} {
						data := generate.NewPromptData(setting, skill)
						data.SetMaxTurns(25)
						data.MaxAttempts, data.ActionFormat = 5, string(format)
						data.ToolSkill, data.Domain, data.TaskType = generate.ToolsRotation(1, 4, 2, 1)
						if !noCorpus {
							data.Excerpt = "THE-DOCUMENT"
						}
						if full {
							data.Memory = generate.SelectMemory(memory, skill, 4, 2)
							data.Previous = &generate.Previous{Attempt: 2, Code: "class Old: PREVCODE", Error: "GATE-ERROR"}
						}
						text, err := generate.Render(tmpl, data)
						if err != nil {
							t.Fatalf("%s %s: %v", spec.TemplateName(), format, err)
						}
						want := []string{"reset(self, seed: int) -> str", "25"}
						if full {
							want = append(want, "SEEDCODE", "EASYCODE", "HARDCODE", "PREVCODE", "GATE-ERROR", "attempt 2 of 5")
						}
						if !noCorpus {
							want = append(want, "THE-DOCUMENT")
						}
						if mode == config.HintInline {
							want = append(want, "<hint>")
						} else if strings.Contains(text, "<hint>") || strings.Contains(strings.ToLower(text), "write a privileged hint") {
							t.Errorf("%s asks for a hint", spec.TemplateName())
						}
						if mode == config.HintSeparate {
							switch {
							case setting == "tools":
								want = append(want, "3 to 5 user instructions", "<answer>done</answer>", data.Domain, data.ToolSkill.Name,
									"`success_conditions(self) -> list[bool]`", "distractor", "`enum`")
							case noCorpus:
								want = append(want, "12–18", data.Examples[0], "class SonarDigEnv", "random play loses")
							default:
								want = append(want, "at least 3 commands", "hidden", "[0, 1]", "Trace two different command sequences")
							}
							if setting == "games" && format == config.ActionBoxed {
								want = append(want, `\boxed{command}`)
							}
							if setting == "games" && format == config.ActionTag {
								want = append(want, "<action>{command}</action>")
							}
						}
						for _, w := range want {
							if !strings.Contains(text, w) {
								t.Errorf("%s (%s, full=%v) lacks %q", spec.TemplateName(), format, full, w)
							}
						}
					}
				}
			}
		}
	}
	// inline keeps the recorded versions (replay); separate has its own, the games one without a corpus apart
	for _, name := range []string{"designer_games.v3.tmpl", "designer_tools.v4.tmpl", "designer_games.v2.tmpl", "designer_games_nocorpus.v1.tmpl", "designer_tools.v3.tmpl"} {
		if !names[name] {
			t.Errorf("no setting selects %s (selected: %v)", name, names)
		}
	}
}

// The hint template renders for both settings, action formats and placements, and carries the code.
func TestHintTemplateRenders(t *testing.T) {
	tmpl, err := generate.LoadHintTemplate("")
	if err != nil {
		t.Fatal(err)
	}
	for _, setting := range []string{"games", "tools"} {
		for _, format := range config.ActionFormatValues() {
			for _, placement := range config.HintPlacementValues() {
				text, err := generate.RenderHint(tmpl, generate.HintData{Setting: setting, Code: "class Env: THE-CODE", ActionFormat: string(format), Placement: string(placement)})
				if err != nil {
					t.Fatal(err)
				}
				want := []string{"THE-CODE", "under 100 words", "hint text only"}
				if setting == "tools" {
					want = append(want, "<answer>done</answer>", "placeholders")
				} else if format == config.ActionTag {
					want = append(want, "<action>")
				} else {
					want = append(want, `\boxed{...}`)
				}
				for _, w := range want {
					if !strings.Contains(text, w) {
						t.Errorf("hint prompt (%s, %s, %s) lacks %q", setting, format, placement, w)
					}
				}
			}
		}
	}
	path := filepath.Join(t.TempDir(), "hint.tmpl")
	os.WriteFile(path, []byte("Hint for {{.Setting}}: {{.Code}}"), 0o644)
	over, err := generate.LoadHintTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := generate.RenderHint(over, generate.HintData{Setting: "games", Code: "X"}); text != "Hint for games: X\n" {
		t.Fatalf("override rendered %q", text)
	}
}

func TestParseProgramAndHint(t *testing.T) {
	d, err := generate.ParseProgram("Here:\n```python\n"+envCode+"\n```\n", "stop")
	if err != nil || d.Code != envCode || d.Hint != "" {
		t.Fatalf("program only: %+v %v", d, err)
	}
	if d, err := generate.ParseProgram("```python\n"+envCode+"\n```\n<hint>ignored</hint>", "stop"); err != nil || d.Hint != "" {
		t.Fatalf("a hint written anyway: %+v %v", d, err)
	}
	if _, err := generate.ParseDesigner("```python\n"+envCode+"\n```\n", "stop"); err == nil {
		t.Fatal("inline parse accepted an answer without a hint")
	}
	for in, want := range map[string]string{
		"  Halve the range each turn. Answer with one integer.\n": "Halve the range each turn. Answer with one integer.",
		"<think>hmm</think>Probe the corners first.":              "Probe the corners first.",
		"```json\n{\"hint\": \"Use the parity.\"}\n```":           "Use the parity.",
	} {
		if got, err := generate.ParseHint(in); err != nil || got != want {
			t.Errorf("ParseHint(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := generate.ParseHint("<think>only thoughts</think>  "); err == nil {
		t.Error("empty hint accepted")
	}
	// A truncated think block is never a hint: neither with its opening tag nor as Qwen3's answer that
	// never reached </think>, whose opening tag the template wrote.
	if got, err := generate.ParseHint("<think>Probe the corners first, then"); !errors.Is(err, generate.ErrTruncated) || got != "" {
		t.Errorf("a truncated think block became the hint %q (%v)", got, err)
	}
	if got, err := generate.ParseHint("maybe corners</think>\n\nProbe the corners first."); err != nil || got != "Probe the corners first." {
		t.Errorf("Qwen3 thinking answer: %q, %v", got, err)
	}
}

// addCorpus imports a corpus of n documents into the fixture's lake (doc-0..doc-5 are the samples').
func (f *fixture) addCorpus(t *testing.T, n int) {
	t.Helper()
	var docs []schemas.CorpusRow
	for i := range n {
		docs = append(docs, schemas.CorpusRow{DocID: fmt.Sprintf("doc-%d", i), Text: fmt.Sprintf("CORPUS-TEXT-%d about sorting networks.", i)})
	}
	if _, err := laketest.Commit(context.Background(), f.lk, lake.CorpusKey(f.cfg.Sample.Corpus), docs, lake.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// repair hands the failed code and the gate's error back; resample asks the slot's prompt again with a
// fresh, unused document per attempt and no feedback, as a different request.
func TestRegenRepairAndResample(t *testing.T) {
	ctx := context.Background()
	regenerate := func(mode config.Regen) (prompts []string, rows []schemas.CandidateRow) {
		f := newFixture(t, func(c *config.Config) { c.Generate.Regen = mode; c.Gate.MaxAttempts = 3 })
		f.addCorpus(t, 12)
		if _, err := stage.Within(ctx, f.env(t, ""), stage.Generate, refreshStep, generate.Run); err != nil {
			t.Fatal(err)
		}
		env := f.env(t, "")
		g, err := generate.NewGenerator(ctx, env, refreshStep)
		if err != nil {
			t.Fatal(err)
		}
		tx := env.Lake.Begin(lake.TxnSpec{Run: env.Run, Stage: string(stage.Gate), Step: refreshStep})
		for _, c := range f.candidates(t) {
			if c.Slot != 0 && c.Slot != 3 {
				continue
			}
			prev := c
			for range 2 {
				next, err := g.Regenerate(ctx, tx, prev, "gate: reset(seed=0): THE-GATE-ERROR")
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, next)
				prev = next
			}
			if _, err := g.Regenerate(ctx, tx, prev, "again"); err == nil || !strings.Contains(err.Error(), "max_attempts") {
				t.Fatalf("attempt 4 of 3 allowed: %v", err)
			}
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for _, req := range f.srv.Requests() {
			prompts = append(prompts, req.Messages[len(req.Messages)-1].Content)
		}
		return prompts, rows
	}
	repairPrompts, repairRows := regenerate(config.RegenRepair)
	resamplePrompts, resampleRows := regenerate(config.RegenResample)
	if len(repairRows) != 4 || len(resampleRows) != 4 {
		t.Fatalf("%d repair and %d resample rows, want 4 each", len(repairRows), len(resampleRows))
	}
	first := repairPrompts[:6]
	for i, p := range repairPrompts[6:] {
		if !strings.Contains(p, "THE-GATE-ERROR") || !strings.Contains(p, "previous attempt failed") {
			t.Fatalf("repair prompt %d lacks the gate's error", i)
		}
		if !strings.Contains(p, "EXCERPT-") {
			t.Fatal("repair changed the slot's document")
		}
	}
	for _, r := range repairRows {
		if r.DocID != fmt.Sprintf("doc-%d", r.Slot) || r.PreviousError == "" {
			t.Fatalf("repair row %+v", r)
		}
	}
	seen := map[string]bool{}
	for _, p := range resamplePrompts[6:] {
		if strings.Contains(p, "THE-GATE-ERROR") || strings.Contains(p, "previous attempt failed") {
			t.Fatal("resample prompt carries error feedback")
		}
		if !strings.Contains(p, "CORPUS-TEXT-") || strings.Contains(p, "EXCERPT-") {
			t.Fatal("resample prompt does not show a fresh corpus document")
		}
		for _, q := range first {
			if p == q {
				t.Fatal("resample repeated a first-attempt request")
			}
		}
	}
	for _, r := range resampleRows {
		var n int
		fmt.Sscanf(r.DocID, "doc-%d", &n)
		if n < 6 || seen[r.DocID] || r.PreviousError != "" {
			t.Fatalf("resampled attempt %d of slot %d drew %q (used by the samples, or twice)", r.Attempt, r.Slot, r.DocID)
		}
		seen[r.DocID] = true
	}
	// the draw rule alone decides the document: the same run drawn again gives the same ids
	_, again := regenerate(config.RegenResample)
	for i := range again {
		if again[i].DocID != resampleRows[i].DocID {
			t.Fatalf("resample draw is not deterministic: %s then %s", resampleRows[i].DocID, again[i].DocID)
		}
	}
}

// corpus.Excerpt cuts by words, then by characters.
func TestExcerptWords(t *testing.T) {
	if got := corpus.Excerpt("one two  three\nfour", 0, 3); got != "one two  three" {
		t.Fatalf("words: %q", got)
	}
	if got := corpus.Excerpt("one two", 0, 5); got != "one two" {
		t.Fatalf("short: %q", got)
	}
	if got := corpus.Excerpt("aaaa bbbb cccc", 11, 0); got != "aaaa bbbb" {
		t.Fatalf("chars: %q", got)
	}
}
