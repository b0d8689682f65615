package generate

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// PromptVersions names the embedded Designer template of each setting under generate.hint_mode =
// inline (the Designer writes the hint in its answer); bump a setting's version with any change of its
// text, since the text is part of every recorded request (and so of replay). Tools v2 asks for
// success_conditions() (the gate's tools_conditions check); games is unchanged, so recorded games runs
// (testdata/sample-run) still replay.
var PromptVersions = map[string]string{string(schemas.SettingGames): "v1", string(schemas.SettingTools): "v2"}

// SeparatePromptVersions names the embedded Designer template of each prompt family under
// generate.hint_mode = separate: the authors' prompt content (docs/architecture.md, "Contracts"), which
// asks for the program alone. The families are the settings and games_nocorpus (ablation.no_corpus in
// the games setting, which has a prompt of its own).
var SeparatePromptVersions = map[string]string{
	string(schemas.SettingGames): "v2", familyGamesNoCorpus: "v1", string(schemas.SettingTools): "v3",
}

const familyGamesNoCorpus = "games_nocorpus"

// HintPromptVersion is the version of the embedded hint template (hint.<version>.tmpl).
const HintPromptVersion = "v1"

// PromptSpec is what selects a Designer template: the setting and the settings that change its text.
type PromptSpec struct {
	// Setting is games or tools.
	Setting string
	// HintMode is generate.hint_mode: inline asks for a <hint> in the answer, separate does not.
	HintMode config.HintMode
	// NoCorpus is ablation.no_corpus.
	NoCorpus bool
}

// SpecOf returns the prompt spec of a run's configuration.
func SpecOf(cfg *config.Config) PromptSpec {
	return PromptSpec{Setting: string(cfg.Setting), HintMode: cfg.Generate.HintMode, NoCorpus: cfg.Ablation.NoCorpus}
}

// AsksHint reports whether the Designer's answer must carry a <hint> (generate.hint_mode = inline).
func (p PromptSpec) AsksHint() bool { return p.HintMode != config.HintSeparate }

// TemplateName returns the embedded template file of a spec: designer_<family>.<version>.tmpl. Inline
// mode keeps the recorded templates (PromptVersions, one per setting, no_corpus only drops the document
// section); separate mode takes SeparatePromptVersions, where the games setting without a corpus has
// its own family.
func (p PromptSpec) TemplateName() string {
	family, versions := p.Setting, PromptVersions
	if !p.AsksHint() {
		versions = SeparatePromptVersions
		if p.NoCorpus && p.Setting == string(schemas.SettingGames) {
			family = familyGamesNoCorpus
		}
	}
	version, ok := versions[family]
	if !ok {
		version = "v1"
	}
	return fmt.Sprintf("designer_%s.%s.tmpl", family, version)
}

// TemplateName returns the embedded inline-mode template file of a setting (see PromptSpec.TemplateName).
func TemplateName(setting string) string {
	return PromptSpec{Setting: setting, HintMode: config.HintInline}.TemplateName()
}

// LoadTemplate returns the Designer template of a spec: the file at overridePath when it is not empty
// (llm.prompt_file), else the embedded one. The error names the file and the template error.
func LoadTemplate(spec PromptSpec, overridePath string) (*template.Template, error) {
	return loadTemplate("designer prompt for setting "+strconv.Quote(spec.Setting), spec.TemplateName(), overridePath)
}

// LoadHintTemplate returns the hint writer's template: the file at overridePath when it is not empty
// (generate.hint_prompt_file), else the embedded hint.<HintPromptVersion>.tmpl.
func LoadHintTemplate(overridePath string) (*template.Template, error) {
	return loadTemplate("hint prompt", "hint."+HintPromptVersion+".tmpl", overridePath)
}

func loadTemplate(what, embedded, overridePath string) (*template.Template, error) {
	name := embedded
	var text []byte
	var err error
	if overridePath != "" {
		name = overridePath
		text, err = os.ReadFile(overridePath)
	} else {
		text, err = promptFS.ReadFile("prompts/" + name)
	}
	if err != nil {
		return nil, fmt.Errorf("generate: %s: %w", what, err)
	}
	tmpl, err := template.New(name).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("generate: %s %s: %w", what, name, err)
	}
	return tmpl, nil
}

// skillInfo is the title and one-line description of each skill shown to the Designer.
var skillInfo = map[string][2]string{
	schemas.SkillMath:     {"math reasoning", "multi-step quantitative problems: derive, compute and check numeric or symbolic results."},
	schemas.SkillLogic:    {"logical deduction", "infer hidden facts from rules and clues; eliminate possibilities consistently."},
	schemas.SkillSpatial:  {"spatial reasoning", "positions, shapes, paths, rotations and arrangements in grids or space."},
	schemas.SkillPattern:  {"pattern recognition", "discover hidden rules behind sequences, mappings or transformations by probing."},
	schemas.SkillOptimize: {"optimization", "search for the best configuration under constraints with limited evaluations."},
	schemas.SkillCausal:   {"causal inference", "intervene on a hidden system, observe effects and identify its causal structure."},
	schemas.SkillToolUse:  {"tool use", "complete user instructions by calling tools that read and modify backend state."},
}

// MemoryEntry is one remembered environment shown to the Designer.
type MemoryEntry struct {
	EnvID     string
	Skill     string
	Regret    float64
	SolveRate float64
	Code      string
	Hint      string
}

// MemoryBlock is the memory part of a prompt: seeds to mutate and examples to avoid.
type MemoryBlock struct {
	Seeds   []MemoryEntry
	TooEasy []MemoryEntry
	TooHard []MemoryEntry
}

// Any reports whether the block shows anything.
func (m MemoryBlock) Any() bool { return len(m.Seeds)+len(m.TooEasy)+len(m.TooHard) > 0 }

// Refs returns the env ids shown, seeds first (the envs.memory_refs column).
func (m MemoryBlock) Refs() []string {
	var refs []string
	for _, group := range [][]MemoryEntry{m.Seeds, m.TooEasy, m.TooHard} {
		for _, e := range group {
			refs = append(refs, e.EnvID)
		}
	}
	return refs
}

// MemoryCodeChars bounds the code of one memory entry in the prompt (characters), so a memory of long
// programs cannot crowd out the budget; a cut program ends with a "# … cut" line.
const MemoryCodeChars = 6000

// SelectMemory picks the memory shown for a skill from the newest snapshot: up to `seeds` entries
// labelled seed, highest regret first (the slot's skill before others, newer first on ties), and up to
// `examples` too_easy and too_hard entries of the slot's skill, newest first. An empty memory gives an
// empty block.
func SelectMemory(memory []schemas.MemoryRow, skill string, seeds, examples int) MemoryBlock {
	var block MemoryBlock
	sorted := append([]schemas.MemoryRow(nil), memory...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Position > sorted[j].Position })
	var seedRows []schemas.MemoryRow
	for _, m := range sorted {
		if m.Label == schemas.LabelSeed {
			seedRows = append(seedRows, m)
		}
	}
	sort.SliceStable(seedRows, func(i, j int) bool {
		si, sj := seedRows[i].Skill == skill, seedRows[j].Skill == skill
		if si != sj {
			return si
		}
		return seedRows[i].Regret > seedRows[j].Regret
	})
	for _, m := range seedRows[:min(seeds, len(seedRows))] {
		block.Seeds = append(block.Seeds, memoryEntry(m))
	}
	for _, m := range sorted {
		if m.Skill != skill {
			continue
		}
		switch {
		case m.Label == schemas.LabelTooEasy && len(block.TooEasy) < examples:
			block.TooEasy = append(block.TooEasy, memoryEntry(m))
		case m.Label == schemas.LabelTooHard && len(block.TooHard) < examples:
			block.TooHard = append(block.TooHard, memoryEntry(m))
		}
	}
	return block
}

func memoryEntry(m schemas.MemoryRow) MemoryEntry {
	code := m.Code
	if len(code) > MemoryCodeChars {
		cut := MemoryCodeChars
		for cut > 0 && !isRuneStart(code[cut]) {
			cut--
		}
		code = code[:cut] + "\n# … cut"
	}
	return MemoryEntry{EnvID: m.EnvID, Skill: m.Skill, Regret: m.Regret, SolveRate: m.SolveRate, Code: code, Hint: m.Hint}
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Previous is the failed attempt handed back to the Designer on regeneration.
type Previous struct {
	// Attempt is the failed attempt's number.
	Attempt int
	// Code is the failed program (empty when the response did not parse).
	Code string
	// Error is the gate's (or the parser's) error.
	Error string
}

// PromptData is what a Designer template is executed with.
type PromptData struct {
	Setting          string
	Skill            string
	SkillTitle       string
	SkillDescription string
	// Excerpt is the corpus excerpt; empty under ablation.no_corpus.
	Excerpt string
	// Memory is empty under ablation.no_memory.
	Memory      MemoryBlock
	MaxTurns    int
	MaxAttempts int
	// Previous is set on a repair regeneration (generate.regen = repair).
	Previous *Previous

	// The fields below serve the separate-mode templates (the authors' prompt content).

	// ActionFormat is rollout.action_format: boxed (the Agent writes \boxed{command}) or tag
	// (<action>command</action>).
	ActionFormat string
	// MinSteps is the fewest interactions a games goal may need (3).
	MinSteps int
	// PlanTurnsLo and PlanTurnsHi bound the turns optimal play should take in a no-corpus game: half and
	// three quarters of rollout.max_turns (12–18 of 25).
	PlanTurnsLo, PlanTurnsHi int
	// Examples are example games of the skill (the no-corpus prompt).
	Examples []string
	// ToolSkill, Domain and TaskType are the tools prompt's per-call rotation (ToolsRotation).
	ToolSkill ToolSkill
	Domain    string
	TaskType  TaskType
}

// MinInteractionSteps is the fewest interactions a games goal may need (the authors' prompt).
const MinInteractionSteps = 3

// NewPromptData fills the skill's title, description and example games.
func NewPromptData(setting, skill string) PromptData {
	info := skillInfo[skill]
	return PromptData{Setting: setting, Skill: skill, SkillTitle: info[0], SkillDescription: info[1],
		ActionFormat: "boxed", MinSteps: MinInteractionSteps, Examples: exampleGames[skill]}
}

// SetMaxTurns sets the turn budget and the planned length of an optimal no-corpus game.
func (d *PromptData) SetMaxTurns(maxTurns int) {
	d.MaxTurns, d.PlanTurnsLo, d.PlanTurnsHi = maxTurns, maxTurns/2, maxTurns*3/4
}

// HintData is what the hint template is executed with.
type HintData struct {
	// Setting is games or tools.
	Setting string
	// Skill is the env's skill.
	Skill string
	// Code is the accepted environment program.
	Code string
	// ActionFormat is rollout.action_format (games): boxed or tag.
	ActionFormat string
	// Placement is rollout.hint_placement: observation (after the first observation) or system.
	Placement string
}

// RenderHint executes the hint template; the result is trimmed of surrounding blank lines.
func RenderHint(tmpl *template.Template, data HintData) (string, error) {
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("generate: render hint prompt: %w", err)
	}
	return strings.TrimSpace(buf.String()) + "\n", nil
}

// Render executes the template; the result is trimmed of surrounding blank lines.
func Render(tmpl *template.Template, data PromptData) (string, error) {
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("generate: render designer prompt: %w", err)
	}
	return strings.TrimSpace(buf.String()) + "\n", nil
}
