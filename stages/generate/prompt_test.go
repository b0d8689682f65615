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

// Under generate.tools_contract authors (the tools presets) the separate-mode tools prompt is
// designer_tools.v5, which asks for a ToolUseBaseEnv subclass in the authors' contract (the instructions
// and their criteria set in reset, tool_<name> methods, solution, no step of its own); spade keeps v3,
// which asks for tools(), a JSON-call step and success_conditions().
func TestToolsPromptFollowsTheToolsContract(t *testing.T) {
	authors := generate.PromptSpec{Setting: "tools", HintMode: config.HintSeparate, ToolsContract: config.ToolsContractAuthors}
	spade := authors
	spade.ToolsContract = config.ToolsContractSpade
	if authors.TemplateName() != "designer_tools.v5.tmpl" || spade.TemplateName() != "designer_tools.v3.tmpl" {
		t.Fatalf("templates %s, %s", authors.TemplateName(), spade.TemplateName())
	}
	inline := authors
	inline.HintMode = config.HintInline
	if inline.TemplateName() != generate.TemplateName("tools") {
		t.Fatalf("inline mode keeps its recorded template: %s", inline.TemplateName())
	}
	cfg, err := config.Preset("qwen3-4b-tools")
	if err != nil {
		t.Fatal(err)
	}
	if generate.SpecOf(cfg).TemplateName() != "designer_tools.v5.tmpl" {
		t.Fatalf("the tools presets ask for %s", generate.SpecOf(cfg).TemplateName())
	}
	for spec, want := range map[generate.PromptSpec][]string{
		authors: {"class MyToolEnv(ToolUseBaseEnv):", "self._message_criteria", "tool_<name>", "max_turns=25", "<answer>done</answer>"},
		spade:   {"success_conditions(self)", "`tools(self) -> list`"},
	} {
		tmpl, err := generate.LoadTemplate(spec, "")
		if err != nil {
			t.Fatal(err)
		}
		data := generate.NewPromptData("tools", "tool_use")
		data.SetMaxTurns(25)
		data.Gymnasium = true
		data.ToolSkill, data.Domain, data.TaskType = generate.ToolsRotation(1, 0, 0, 1)
		text, err := generate.Render(tmpl, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: no %q in the prompt", spec.TemplateName(), w)
			}
		}
		if spec == authors && (strings.Contains(text, "success_conditions") || strings.Contains(text, "tools(self)")) {
			t.Errorf("%s asks for spade's own contract", spec.TemplateName())
		}
	}
}

// A slot of a tool skill (sample.skills listing the six) is written for that skill: ToolSkillOf gives
// its catalogue entry, in schemas.ToolSkills' order; tool_use and the games skills have none.
func TestToolSkillOfTheSlot(t *testing.T) {
	names := []string{"API orchestration", "data retrieval", "state modification", "error recovery", "tool selection", "multi-step workflows"}
	for i, skill := range schemas.ToolSkills {
		got, ok := generate.ToolSkillOf(skill)
		if !ok || got.Name != names[i] {
			t.Errorf("ToolSkillOf(%s) = %q %v, want %q", skill, got.Name, ok, names[i])
		}
	}
	for _, skill := range []string{schemas.SkillToolUse, schemas.SkillMath} {
		if _, ok := generate.ToolSkillOf(skill); ok {
			t.Errorf("ToolSkillOf(%s) found an entry", skill)
		}
	}
}
