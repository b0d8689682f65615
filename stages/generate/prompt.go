package generate

import (
	"bytes"
	"embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/tmplfile"
	"github.com/spadekit/spade/schemas"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// PromptVersions names the embedded Designer template of each setting under generate.hint_mode =
// inline (the Designer writes the hint in its answer); bump a setting's version with any change of its
// text, since the text is part of every recorded request (and so of replay). Tools v2 asks for
// success_conditions() (the gate's tools_conditions check). Games v3 and tools v4 add the memory settings
// (hidden hints, negatives by class name, the authors' negatives' wording) and render exactly as games v1
// and tools v2 under the default memory keys, so recorded runs (testdata/sample-run) still replay. Every
// Designer template asks for the env contract of generate.contract (PromptData.Gymnasium) and renders
// as it did before the gymnasium contract under legacy.
var PromptVersions = map[string]string{string(schemas.SettingGames): "v3", string(schemas.SettingTools): "v4"}

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
	// ToolsContract is generate.tools_contract: under separate mode, authors asks tools programs for the
	// ToolUseBaseEnv contract (AuthorsToolsPromptVersion).
	ToolsContract config.ToolsContract
}

// AuthorsToolsPromptVersion is the version of the separate-mode tools template under
// generate.tools_contract authors, which asks for a ToolUseBaseEnv subclass.
const AuthorsToolsPromptVersion = "v5"

// SpecOf returns the prompt spec of a run's configuration.
func SpecOf(cfg *config.Config) PromptSpec {
	return PromptSpec{Setting: string(cfg.Setting), HintMode: cfg.Generate.HintMode, NoCorpus: cfg.Ablation.NoCorpus,
		ToolsContract: cfg.Generate.ToolsContract}
}

// AsksHint reports whether the Designer's answer must carry a <hint> (generate.hint_mode = inline).
func (p PromptSpec) AsksHint() bool { return p.HintMode != config.HintSeparate }

// TemplateName returns the embedded template file of a spec: designer_<family>.<version>.tmpl. Inline
// mode keeps the recorded templates (PromptVersions, one per setting, no_corpus only drops the document
// section); separate mode takes SeparatePromptVersions, where the games setting without a corpus has
// its own family, and tools under generate.tools_contract authors AuthorsToolsPromptVersion.
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
	if !p.AsksHint() && family == string(schemas.SettingTools) && p.ToolsContract == config.ToolsContractAuthors {
		version = AuthorsToolsPromptVersion
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
	tmpl, name, readErr, parseErr := tmplfile.Load(promptFS, "prompts/"+embedded, overridePath)
	if readErr != nil {
		return nil, fmt.Errorf("generate: %s: %w", what, readErr)
	}
	if parseErr != nil {
		return nil, fmt.Errorf("generate: %s %s: %w", what, name, parseErr)
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
	// Gymnasium asks for the authors' env contract, Gymnasium's API (generate.contract = gymnasium); false
	// renders the old contract's section, exactly as recorded runs asked for it.
	Gymnasium bool
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
