package config

import (
	"slices"
	"strings"

	"github.com/spadekit/spade/schemas"
)

// Sample configures the pool schedule and the corpus draw (stages/sample): which skills each pool
// trains, how many envs a refresh step asks for, and the document each slot's Designer call reads.
type Sample struct {
	// EnvsPerStep is the number of envs each refresh step generates. The Designer writes one env per
	// slot and the pool holds them until the next refresh (the authors' launch scripts'
	// --spade-num-games-per-rollout, 24).
	EnvsPerStep int `json:"envs_per_step" range:">=1"`
	// SkillsPerWindow is how many skills each pool trains. They are taken from sample.skills in the order
	// sample.skill_order gives, and the slots are spread over them in turn (the authors' SKILLS_PER_REGEN,
	// 3).
	SkillsPerWindow int `json:"skills_per_window" range:"[1,6]"`
	// RefreshEvery is the pool length in steps. A new pool is generated at every multiple of it and played
	// until the next (the authors' --spade-game-regeneration-interval: 4 in games, 8 in tools).
	RefreshEvery int `json:"refresh_every" range:">=1"`
	// Corpus names the imported corpus (`spade corpus import --name NAME FILE`) the slots' documents are
	// drawn from.
	Corpus string `json:"corpus"`
	// ExcerptChars cuts a slot's document to this many characters (runes); 0 does not cut by characters.
	// The cut falls at a paragraph or sentence break near the end when there is one.
	ExcerptChars int `json:"excerpt_chars" range:">=0"`
	// ExcerptWords cuts a slot's document to this many words before the character cut; 0 does not cut by
	// words. The authors' launch scripts cut games documents at 6,000 and tools documents at 4,000 tokens
	// (--spade-corpus-max-doc-tokens); spade cuts words.
	ExcerptWords int `json:"excerpt_words" range:">=0"`
	// DocDraw is how a slot's document is drawn: replacement, uniform or matched. replacement draws every
	// slot's and every resampled attempt's document uniformly from the whole corpus, independently, so
	// documents repeat (the authors'); uniform draws among the documents the run has not used yet;
	// matched prefers unused documents whose domain suits the slot's skill.
	DocDraw DocDraw `json:"doc_draw"`
	// ExcerptCut is how sample.excerpt_words cuts a document: marked or plain. marked joins the first
	// excerpt_words words with single spaces and adds a line saying the document was truncated at about
	// that many words (the authors' loader); plain keeps the text up to the end of that word, whitespace
	// and all, with no marker.
	ExcerptCut ExcerptCut `json:"excerpt_cut"`
	// Skills is the comma-separated list of skills the pools rotate through; empty means every skill.
	// Every skill is, in games, math_reasoning, logical_deduction, spatial_reasoning,
	// pattern_recognition, optimization and causal_inference, in that order, and tool_use in tools; the
	// two-skill ablation lists two. In tools the six tool skills (api_orchestration, data_retrieval,
	// state_modification, error_recovery, tool_selection, multi_step_workflows) may be listed instead:
	// each slot then has one, the Designer writes for it, and memory and the Designer's centring are per
	// tool skill (the tools presets list all six, all active, one per slot in turn: the authors').
	Skills string `json:"skills"`
	// SkillOrder is the order in which the pools take their skills from sample.skills: round_robin or
	// seeded. round_robin follows the list (the authors' rotation); seeded rotates a seeded shuffle of it.
	SkillOrder SkillOrder `json:"skill_order"`
	// Pool names a static pool (`spade pool import`) to play instead of generating envs; empty generates.
	// Every refresh step then takes its envs from the pool: fixed-environment GRPO, no Designer training.
	Pool string `json:"pool"`
	// RLVETauAcc is the accuracy at the top level of an RLVE environment's window at which the window
	// moves up one level (pools imported with --format rlve; the authors' --spade-difficulty-tau-acc, 0.9).
	RLVETauAcc float64 `json:"rlve_tau_acc" range:"[0,1]"`
	// RLVETauNum is how many plays at the top level of an RLVE environment's window are counted before
	// its accuracy is checked; the count starts again after every check (--spade-difficulty-tau-num, 128:
	// eight steps of 16 plays).
	RLVETauNum int `json:"rlve_tau_num" range:">=1"`
	// RLVEWindow is the most levels an RLVE environment's window spans; its problems are drawn uniformly
	// from the window (--spade-difficulty-d-delta, 4).
	RLVEWindow int `json:"rlve_window" range:">=1"`
	// RLVEMaxLevel is the highest level an RLVE environment's window reaches (the authors' adapter's
	// max_difficulty, 20).
	RLVEMaxLevel int `json:"rlve_max_level" range:">=0"`
}

func init() {
	registerEnum(DocDrawValues())
	registerEnum(ExcerptCutValues())
	registerEnum(SkillOrderValues())
}

// DocDraw is sample.doc_draw: how a slot's corpus document is drawn.
type DocDraw string

// The document draws.
const (
	// DocReplacement draws uniformly from the whole corpus for every slot and attempt (the authors').
	DocReplacement DocDraw = "replacement"
	// DocUniform draws uniformly among unused documents.
	DocUniform DocDraw = "uniform"
	// DocMatched prefers documents whose domain suits the slot's skill.
	DocMatched DocDraw = "matched"
)

// DocDrawValues lists every draw.
func DocDrawValues() []DocDraw { return []DocDraw{DocReplacement, DocUniform, DocMatched} }

// ExcerptCut is sample.excerpt_cut: how a document is cut by words.
type ExcerptCut string

// The word cuts.
const (
	// ExcerptMarked joins the kept words with single spaces and adds a truncation line (the authors').
	ExcerptMarked ExcerptCut = "marked"
	// ExcerptPlain keeps the text as it is up to the last kept word.
	ExcerptPlain ExcerptCut = "plain"
)

// ExcerptCutValues lists every word cut.
func ExcerptCutValues() []ExcerptCut { return []ExcerptCut{ExcerptMarked, ExcerptPlain} }

// SkillOrder is sample.skill_order: how the active skills of each pool are chosen.
type SkillOrder string

// The skill orders.
const (
	// SkillsRoundRobin takes sample.skills_per_window skills per pool, round-robin through
	// sample.skills in its order (the authors').
	SkillsRoundRobin SkillOrder = "round_robin"
	// SkillsSeeded rotates a seeded shuffle of the skills.
	SkillsSeeded SkillOrder = "seeded"
)

// SkillOrderValues lists every order.
func SkillOrderValues() []SkillOrder { return []SkillOrder{SkillsRoundRobin, SkillsSeeded} }

// validate checks sample.skills (SkillList).
func (Sample) validate(c *Config) error {
	_, err := c.SkillList()
	return err
}

// SkillList returns sample.skills as a list (every skill, in schemas.Skills order, when empty; tool_use
// alone in the tools setting), or an error naming the key for an unknown or repeated skill, or for
// sample.skills_per_window above the number of skills listed.
func (c *Config) SkillList() ([]string, error) {
	if strings.TrimSpace(c.Sample.Skills) == "" {
		if c.Setting == schemas.SettingTools {
			return []string{schemas.SkillToolUse}, nil
		}
		return slices.Clone(schemas.Skills), nil
	}
	var out []string
	for _, part := range strings.Split(c.Sample.Skills, ",") {
		s := strings.TrimSpace(part)
		if !slices.Contains(schemas.Skills, s) && !schemas.IsToolSkill(s) {
			return nil, invalidf("config: key \"sample.skills\": unknown skill %q (skills: %s; tools: %s, %s)", s,
				strings.Join(schemas.Skills, ", "), schemas.SkillToolUse, strings.Join(schemas.ToolSkills, ", "))
		}
		if schemas.IsToolSkill(s) != (c.Setting == schemas.SettingTools) {
			return nil, invalidf("config: key \"sample.skills\": %q is not a skill of the %s setting", s, c.Setting)
		}
		if slices.Contains(out, s) {
			return nil, invalidf("config: key \"sample.skills\": %q is listed twice", s)
		}
		out = append(out, s)
	}
	if c.Sample.SkillsPerWindow > len(out) {
		return nil, invalidf("config: key \"sample.skills_per_window\" (%d) must be at most the number of skills sample.skills lists (%d)",
			c.Sample.SkillsPerWindow, len(out))
	}
	return out, nil
}

// presetSample is the pool schedule of the authors' launch scripts: 24 envs per refresh, three skills a
// pool; games regenerate every 4 steps and cut documents at 6,000, tools every 8 and at 4,000 with the six
// tool skills all active, one per slot in turn (SKILLS_PER_REGEN 0 in tools).
func presetSample(p presetSpec) Sample {
	s := Sample{EnvsPerStep: 24, SkillsPerWindow: 3, RefreshEvery: 4, Corpus: "default", ExcerptWords: 6000,
		DocDraw: DocReplacement, ExcerptCut: ExcerptMarked, SkillOrder: SkillsRoundRobin, RLVETauAcc: 0.9, RLVETauNum: 128, RLVEWindow: 4, RLVEMaxLevel: 20}
	if p.setting == schemas.SettingTools {
		s.RefreshEvery, s.ExcerptWords = 8, 4000
	}
	if p.setting == schemas.SettingTools {
		s.Skills, s.SkillsPerWindow = strings.Join(schemas.ToolSkills, ","), len(schemas.ToolSkills)
	}
	if p.ownToolsScript() {
		s.RefreshEvery, s.EnvsPerStep = 32, 16
	}
	return s
}
