package generate

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/template"

	"github.com/spadekit/spade/schemas"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// PromptVersions names the embedded Designer template of each setting; bump a setting's version with
// any change of its text, since the text is part of every recorded request (and so of replay). Tools v2
// asks for success_conditions() (the gate's tools_conditions check); games is unchanged, so recorded
// games runs (testdata/sample-run) still replay.
var PromptVersions = map[string]string{string(schemas.SettingGames): "v1", string(schemas.SettingTools): "v2"}

// TemplateName returns the embedded template file of a setting: designer_<setting>.<version>.tmpl.
func TemplateName(setting string) string {
	version, ok := PromptVersions[setting]
	if !ok {
		version = "v1"
	}
	return fmt.Sprintf("designer_%s.%s.tmpl", setting, version)
}

// LoadTemplate returns the Designer template of a setting: the file at overridePath when it is not
// empty (llm.prompt_file), else the embedded one. The error names the file and the template error.
func LoadTemplate(setting, overridePath string) (*template.Template, error) {
	name := TemplateName(setting)
	var text []byte
	var err error
	if overridePath != "" {
		name = overridePath
		text, err = os.ReadFile(overridePath)
	} else {
		text, err = promptFS.ReadFile("prompts/" + name)
	}
	if err != nil {
		return nil, fmt.Errorf("generate: designer prompt for setting %q: %w", setting, err)
	}
	tmpl, err := template.New(name).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("generate: designer prompt %s: %w", name, err)
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
	// Previous is set on regeneration.
	Previous *Previous
}

// NewPromptData fills the skill's title and description.
func NewPromptData(setting, skill string) PromptData {
	info := skillInfo[skill]
	return PromptData{Setting: setting, Skill: skill, SkillTitle: info[0], SkillDescription: info[1]}
}

// Render executes the template; the result is trimmed of surrounding blank lines.
func Render(tmpl *template.Template, data PromptData) (string, error) {
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("generate: render designer prompt: %w", err)
	}
	return strings.TrimSpace(buf.String()) + "\n", nil
}
