package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/generate"
)

// Both embedded templates render every section: document, memory, previous attempt, contract.
func TestTemplatesRenderEverySection(t *testing.T) {
	memory := []schemas.MemoryRow{
		{Position: 0, EnvID: "e1", Skill: schemas.SkillToolUse, Regret: 0.4, Label: schemas.LabelSeed, Code: "class A: SEEDCODE", Hint: "SEEDHINT"},
		{Position: 1, EnvID: "e2", Skill: schemas.SkillToolUse, SolveRate: 1, Label: schemas.LabelTooEasy, Code: "class B: EASYCODE"},
		{Position: 2, EnvID: "e3", Skill: schemas.SkillToolUse, Label: schemas.LabelTooHard, Code: "class C: HARDCODE"},
	}
	for _, setting := range []string{"games", "tools"} {
		tmpl, err := generate.LoadTemplate(generate.PromptSpec{Setting: setting, HintMode: config.HintInline}, "")
		if err != nil {
			t.Fatal(err)
		}
		skill := schemas.SkillToolUse
		if setting == "games" {
			skill = schemas.SkillSpatial
		}
		for i := range memory {
			memory[i].Skill = skill
		}
		data := generate.NewPromptData(setting, skill)
		data.Excerpt, data.MaxTurns, data.MaxAttempts = "THE-DOCUMENT", 25, 5
		data.Memory = generate.SelectMemory(memory, skill, 4, 2)
		data.Previous = &generate.Previous{Attempt: 2, Code: "class Old: PREVCODE", Error: "GATE-ERROR"}
		text, err := generate.Render(tmpl, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"THE-DOCUMENT", "SEEDCODE", "SEEDHINT", "EASYCODE", "HARDCODE", "PREVCODE", "GATE-ERROR", "attempt 2 of 5", "25", "reset(self, seed: int) -> str", "<hint>"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s prompt lacks %q", setting, want)
			}
		}
		if setting == "tools" && !strings.Contains(text, "3 to 5 user instructions") {
			t.Error("tools prompt lacks the instruction contract")
		}
		// The gate's tools_conditions check evaluates success_conditions(): the contract must ask for it.
		if setting == "tools" && !strings.Contains(text, "`success_conditions(self) -> list[bool]`") {
			t.Error("tools prompt does not ask for success_conditions()")
		}
	}
}

// llm.prompt_file replaces the embedded template; a broken file is an error naming it.
func TestPromptFileOverrides(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "designer.tmpl")
	os.WriteFile(good, []byte("Design for {{.SkillTitle}}{{if .Excerpt}}: {{.Excerpt}}{{end}}"), 0o644)
	tmpl, err := generate.LoadTemplate(generate.PromptSpec{Setting: "games"}, good)
	if err != nil {
		t.Fatal(err)
	}
	data := generate.NewPromptData("games", schemas.SkillMath)
	data.Excerpt = "doc"
	if text, _ := generate.Render(tmpl, data); text != "Design for math reasoning: doc\n" {
		t.Fatalf("rendered %q", text)
	}
	bad := filepath.Join(dir, "bad.tmpl")
	os.WriteFile(bad, []byte("{{.Skill"), 0o644)
	if _, err := generate.LoadTemplate(generate.PromptSpec{Setting: "games"}, bad); err == nil || !strings.Contains(err.Error(), "bad.tmpl") {
		t.Fatalf("broken template: %v", err)
	}
	if _, err := generate.LoadTemplate(generate.PromptSpec{Setting: "games"}, filepath.Join(dir, "missing.tmpl")); err == nil {
		t.Fatal("missing template file accepted")
	}
}
