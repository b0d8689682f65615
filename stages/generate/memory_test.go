package generate_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/stage"
)

// handMemory is a snapshot of one skill (math) plus one entry of another skill, positions oldest first:
//
//	in the band [0.15, 0.85], by regret: s1 .9, s2 .8, s3 .7, s4 .6, s5 .5, s6 .4, s7 .3 (s7 has solve .85,
//	the band's edge); s8 has solve .14 and s9 .86 (outside the band, not negative either); n1 solve .95 and
//	n2 .05 are negatives, n3 solve .9 is not (> .9 is too easy); o1 is logic.
func handMemory() []schemas.MemoryRow {
	rows := []schemas.MemoryRow{
		{EnvID: "s1", Regret: .9, SolveRate: .5}, {EnvID: "s2", Regret: .8, SolveRate: .15},
		{EnvID: "s3", Regret: .7, SolveRate: .6}, {EnvID: "s4", Regret: .6, SolveRate: .3},
		{EnvID: "s5", Regret: .5, SolveRate: .4}, {EnvID: "s6", Regret: .4, SolveRate: .7},
		{EnvID: "s7", Regret: .3, SolveRate: .85}, {EnvID: "s8", Regret: 2, SolveRate: .14},
		{EnvID: "s9", Regret: 2, SolveRate: .86}, {EnvID: "n1", Regret: 0, SolveRate: .95},
		{EnvID: "n2", Regret: 0, SolveRate: .05}, {EnvID: "n3", Regret: 0, SolveRate: .9},
		{EnvID: "o1", Regret: 5, SolveRate: .5, Skill: schemas.SkillLogic},
	}
	for i := range rows {
		rows[i].Position = int32(i)
		if rows[i].Skill == "" {
			rows[i].Skill = schemas.SkillMath
		}
		rows[i].Label = schemas.LabelSeed
		rows[i].Code = fmt.Sprintf("import math\n\nclass Env%s:\n    def reset(self, seed):\n        return 'ok'\n", strings.ToUpper(rows[i].EnvID))
		rows[i].Hint = "hint " + rows[i].EnvID
	}
	return rows
}

func authors(seeds, pool int) generate.MemoryOptions {
	return generate.MemoryOptions{Seeds: seeds, SeedPool: pool, Negatives: 1, CodeChars: 2000, RunSeed: 7, Step: 12, Slot: 3}
}

func ids(entries []generate.MemoryEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.EnvID)
	}
	return out
}

// The authors' rule draws from the top max(seed_pool, 3 × seeds) by regret of the skill's in-band entries.
func TestAuthorsMemoryDrawsFromTheTopOfTheBand(t *testing.T) {
	memory := handMemory()
	for _, tc := range []struct {
		seeds, pool int
		top         []string
	}{
		{2, 3, []string{"s1", "s2", "s3", "s4", "s5", "s6"}}, // 3 × 2 = 6 beats the pool of 3
		{1, 2, []string{"s1", "s2", "s3"}},                   // 3 × 1 = 3
		{2, 10, []string{"s1", "s2", "s3", "s4", "s5", "s6", "s7"}},
	} {
		allowed := map[string]bool{}
		for _, id := range tc.top {
			allowed[id] = true
		}
		seen := map[string]bool{}
		for slot := int32(0); slot < 64; slot++ {
			o := authors(tc.seeds, tc.pool)
			o.Slot = slot
			block := generate.ChooseMemory(memory, schemas.SkillMath, o)
			got := ids(block.Seeds)
			if len(got) != tc.seeds || got[0] == got[len(got)-1] && tc.seeds > 1 {
				t.Fatalf("seeds %d pool %d slot %d: drew %v", tc.seeds, tc.pool, slot, got)
			}
			for _, id := range got {
				if !allowed[id] {
					t.Errorf("seeds %d pool %d: drew %s, outside the top %v", tc.seeds, tc.pool, id, tc.top)
				}
				seen[id] = true
			}
		}
		if len(seen) != len(tc.top) {
			t.Errorf("seeds %d pool %d: 64 slots drew only %v of the top %v", tc.seeds, tc.pool, seen, tc.top)
		}
	}
	// Fewer entries than seeds: every in-band entry of the skill, nothing of the other skill.
	few := generate.ChooseMemory(memory[:2], schemas.SkillMath, authors(4, 10))
	if got := ids(few.Seeds); len(got) != 2 || !(got[0] == "s1" || got[0] == "s2") {
		t.Errorf("two candidates: %v", got)
	}
	if got := generate.ChooseMemory(memory, schemas.SkillLogic, authors(2, 10)); !reflect.DeepEqual(ids(got.Seeds), []string{"o1"}) || got.TooEasy != nil || got.TooHard != nil {
		t.Errorf("logic: %+v, want o1 only", got)
	}
	if got := generate.ChooseMemory(nil, schemas.SkillMath, authors(2, 10)); got.Any() {
		t.Errorf("empty memory: %+v", got)
	}
}

// The draw is a function of the run seed, step and slot.
func TestAuthorsMemoryDrawIsReproducible(t *testing.T) {
	memory := handMemory()
	first := generate.ChooseMemory(memory, schemas.SkillMath, authors(2, 10))
	if again := generate.ChooseMemory(memory, schemas.SkillMath, authors(2, 10)); !reflect.DeepEqual(first, again) {
		t.Fatalf("same seed, step and slot: %v then %v", ids(first.Seeds), ids(again.Seeds))
	}
	differs := false
	for _, change := range []func(*generate.MemoryOptions){
		func(o *generate.MemoryOptions) { o.RunSeed++ }, func(o *generate.MemoryOptions) { o.Step += 4 },
		func(o *generate.MemoryOptions) { o.Slot++ }, func(o *generate.MemoryOptions) { o.Slot += 2 },
	} {
		o := authors(2, 10)
		change(&o)
		if !reflect.DeepEqual(ids(generate.ChooseMemory(memory, schemas.SkillMath, o).Seeds), ids(first.Seeds)) {
			differs = true
		}
	}
	if !differs {
		t.Error("changing the run seed, step or slot never changed the draw")
	}
}

// Display: code cut to code_chars characters, hint hidden, negatives by class name only.
func TestAuthorsMemoryDisplay(t *testing.T) {
	memory := handMemory()
	o := authors(2, 10)
	o.CodeChars = 20
	block := generate.ChooseMemory(memory, schemas.SkillMath, o)
	for _, s := range block.Seeds {
		want := "import math\n\nclass E" + "\n# … cut" // 20 characters, then the cut line
		if s.Code != want || s.Hint != "" || s.NameOnly {
			t.Errorf("seed %s: code %q hint %q name only %v; want %q, no hint", s.EnvID, s.Code, s.Hint, s.NameOnly, want)
		}
	}
	negatives := append(append([]generate.MemoryEntry(nil), block.TooEasy...), block.TooHard...)
	if len(negatives) != 1 || !block.HideHints || !block.ByWinRate {
		t.Fatalf("one negative, hints hidden, by win rate: %+v", block)
	}
	n := negatives[0]
	wantClass := map[string]string{"n1": "EnvN1", "n2": "EnvN2"}[n.EnvID]
	if wantClass == "" || n.Code != "" || !n.NameOnly || n.ClassName != wantClass {
		t.Errorf("negative %+v, want n1 or n2 by class name only", n)
	}
	if (n.EnvID == "n1") != (len(block.TooEasy) == 1) {
		t.Errorf("n1 (solve .95) is too easy, n2 (.05) too hard: easy %v hard %v", ids(block.TooEasy), ids(block.TooHard))
	}
	// Two negatives: both extremes, never n3 (solve .9 is not above .9); with negatives_code and show_hint
	// the code and the hint are shown, code_chars 0 shows the whole program.
	o = authors(2, 10)
	o.Negatives, o.NegativesCode, o.ShowHint, o.CodeChars = 5, true, true, 0
	block = generate.ChooseMemory(memory, schemas.SkillMath, o)
	if !reflect.DeepEqual(ids(block.TooEasy), []string{"n1"}) || !reflect.DeepEqual(ids(block.TooHard), []string{"n2"}) {
		t.Errorf("negatives: easy %v hard %v, want [n1] [n2]", ids(block.TooEasy), ids(block.TooHard))
	}
	for _, e := range append(block.Seeds, block.TooEasy...) {
		full := memory[0].Code
		if strings.Contains(e.Code, "cut") || len(e.Code) != len(full) || e.NameOnly {
			t.Errorf("%s: code %q, want the whole program", e.EnvID, e.Code)
		}
	}
	if block.Seeds[0].Hint != "hint "+block.Seeds[0].EnvID {
		t.Errorf("show_hint: hint %q", block.Seeds[0].Hint)
	}
}

// The default keys keep today's selection: ChooseMemory with the run's default options equals
// SelectMemory(memory, skill, seeds, examples).
func TestDefaultMemoryKeysKeepTodaysSelection(t *testing.T) {
	memory := handMemory()
	memory[9].Label, memory[10].Label = schemas.LabelTooEasy, schemas.LabelTooHard
	memory[0].Code = strings.Repeat("x", generate.MemoryCodeChars+10)
	cfg := config.Default()
	beforeAuthorsKeys(cfg)
	got := generate.ChooseMemory(memory, schemas.SkillMath, generate.MemoryOptionsFrom(cfg, 4, 1))
	want := generate.SelectMemory(memory, schemas.SkillMath, cfg.Memory.Seeds, cfg.Memory.Examples)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("default keys:\n%+v\nwant\n%+v", got, want)
	}
	// Today's rule reads the labels, not the band: the slot's skill first by regret (newer first on ties:
	// s9, s8), then s1, s2; the other skill's o1 (regret 5) comes after the slot's skill.
	if !reflect.DeepEqual(ids(got.Seeds), []string{"s9", "s8", "s1", "s2"}) || got.HideHints || got.ByWinRate {
		t.Errorf("today's seeds %v", ids(got.Seeds))
	}
	if !reflect.DeepEqual(ids(got.TooEasy), []string{"n1"}) || !reflect.DeepEqual(ids(got.TooHard), []string{"n2"}) || got.TooEasy[0].Code == "" {
		t.Errorf("today's examples: easy %v hard %v, with code", ids(got.TooEasy), ids(got.TooHard))
	}
	for _, s := range got.Seeds {
		if s.EnvID == "s1" && !strings.HasSuffix(s.Code, "\n# … cut") {
			t.Errorf("today's 6000-byte guard not applied to s1")
		}
	}
}

// Templates games v3 and tools v4 render exactly as games v1 and tools v2 under the default memory keys,
// so recorded requests (and replay) do not change; with the authors' keys they show class names and hide hints.
func TestNewPromptVersionsRenderAsBeforeUnderDefaults(t *testing.T) {
	defaults := config.Default()
	beforeAuthorsKeys(defaults)
	memory := handMemory()
	memory[9].Label, memory[10].Label = schemas.LabelTooEasy, schemas.LabelTooHard
	for setting, old := range map[string]string{"games": "prompts/designer_games.v1.tmpl", "tools": "prompts/designer_tools.v2.tmpl"} {
		oldTmpl, err := generate.LoadTemplate(generate.PromptSpec{Setting: setting, HintMode: config.HintInline}, old)
		if err != nil {
			t.Fatal(err)
		}
		newTmpl, err := generate.LoadTemplate(generate.PromptSpec{Setting: setting, HintMode: config.HintInline}, "")
		if err != nil {
			t.Fatal(err)
		}
		for name, mem := range map[string][]schemas.MemoryRow{"empty": nil, "seeds only": memory[:3], "all": memory} {
			data := generate.NewPromptData(setting, schemas.SkillMath)
			data.Excerpt, data.MaxTurns, data.MaxAttempts = "DOC", 25, 5
			data.Memory = generate.ChooseMemory(mem, schemas.SkillMath, generate.MemoryOptionsFrom(defaults, 0, 0))
			a, errA := generate.Render(oldTmpl, data)
			b, errB := generate.Render(newTmpl, data)
			if errA != nil || errB != nil || a != b {
				t.Errorf("%s, memory %s: the new version renders differently (%v %v)\nold:\n%s\nnew:\n%s", setting, name, errA, errB, a, b)
			}
		}
		data := generate.NewPromptData(setting, schemas.SkillMath)
		o := authors(2, 10)
		o.Negatives = 5
		data.Memory = generate.ChooseMemory(memory, schemas.SkillMath, o)
		text, err := generate.Render(newTmpl, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"class EnvN1</too_easy>", "class EnvN2</too_hard>", "almost never solved"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s, authors' keys: prompt lacks %q", setting, want)
			}
		}
		for _, unwanted := range []string{"<hint>hint", "even with the hint", "class EnvN1:"} {
			if strings.Contains(text, unwanted) {
				t.Errorf("%s, authors' keys: prompt shows %q", setting, unwanted)
			}
		}
	}
}

func TestClassName(t *testing.T) {
	for code, want := range map[string]string{
		"import random\n\nclass Maze:\n    pass\n":            "Maze",
		"class _Env2(object):\n    pass":                      "_Env2",
		"# class Fake\nx = 'class Nope'\nclass Real:\n  pass": "Real",
		"def f():\n    class Inner: pass\n":                   "",
	} {
		if got := generate.ClassName(code); got != want {
			t.Errorf("ClassName(%q) = %q, want %q", code, got, want)
		}
	}
}

// FileStem is the authors' loader's file name of a program, which their memory shows a negative by.
func TestFileStem(t *testing.T) {
	for _, c := range []struct {
		pool  int64
		slot  int32
		skill string
		want  string
	}{
		{0, 3, "math_reasoning", "game_00000_003_math_reasoning"},
		{396, 23, "Spatial Reasoning", "game_00396_023_spatial_reasoning"},
		{12345, 7, "tool use", "game_12345_007_tool_use"},
	} {
		if got := generate.FileStem(c.pool, c.slot, c.skill); got != c.want {
			t.Errorf("FileStem(%d, %d, %q) = %q, want %q", c.pool, c.slot, c.skill, got, c.want)
		}
	}
}

// Under the presets' memory.negative_name file_stem a negative shown by name only is named by its file
// stem (its pool, its slot read from the pool's envs, its skill), not by its class; an entry whose pool's
// envs are not in the lake keeps its class name.
func TestNegativeShownByItsFileStem(t *testing.T) {
	f := newFixture(t, func(c *config.Config) {
		c.Memory.SeedPool, c.Memory.Negatives, c.Memory.NegativesCode = 10, 5, false
		c.Memory.NegativeName = config.NegativeByFileStem
	})
	envs := []schemas.EnvRow{
		{PoolStep: 0, Slot: 7, EnvID: "env-old-easy", Skill: schemas.SkillMath, Setting: schemas.SettingGames, Code: "x", CodeSHA256: strings.Repeat("0", 64)},
		{PoolStep: 0, Slot: 2, EnvID: "env-old-seed", Skill: schemas.SkillMath, Setting: schemas.SettingGames, Code: "x", CodeSHA256: strings.Repeat("0", 64)},
	}
	laketest.Write(t, f.lk, lake.PartitionKey{Run: f.run, Table: schemas.EnvsSpec.Name, Step: 0}, envs)
	if _, err := stage.Within(context.Background(), f.env(t, trainedModel), stage.Generate, refreshStep, generate.Run); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, c := range f.calls(t) {
		if !strings.Contains(c.Request, "math reasoning") {
			continue
		}
		seen++
		if !strings.Contains(c.Request, "class game_00000_007_math_reasoning") || strings.Contains(c.Request, "class EasyEnv") {
			t.Errorf("the too-easy negative is not named by its file stem:\n%s", c.Request)
		}
		if strings.Contains(c.Request, "MEMORY-EASY") {
			t.Error("a negative's code is shown under negatives_code false")
		}
	}
	if seen == 0 {
		t.Fatal("no math prompt recorded")
	}
}
