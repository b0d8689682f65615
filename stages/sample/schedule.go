package sample

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// SkillOrder returns the run's fixed rotation of the six games skills: schemas.Skills shuffled by a
// PCG generator seeded with the run seed (the order sample.skill_order = seeded rotates through).
func SkillOrder(seed int64) []string { return shuffled(schemas.Skills, seed) }

// shuffled returns a copy of skills shuffled by a PCG generator seeded with seed.
func shuffled(skills []string, seed int64) []string {
	order := append([]string(nil), skills...)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5350414445)) // "SPADE"
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// ActiveSkills returns the k skills active in refresh window w (w = step / refresh_every) under the seeded
// order: the window takes the next k skills of SkillOrder(seed), wrapping around, so with k = 3 every
// skill is active in every other window and all six appear within 6/gcd(6, k) windows. k is clamped to
// 1..6.
func ActiveSkills(seed int64, window int64, k int) []string {
	return rotate(SkillOrder(seed), window, k)
}

// rotate returns the k skills of window w: order[(w·k + i) mod n] for i < k (the authors' round-robin
// over the skill list; every skill when k ≥ n). k is clamped to 1..n.
func rotate(order []string, window int64, k int) []string {
	n := int64(len(order))
	k = max(1, min(k, len(order)))
	active := make([]string, k)
	for i := range k {
		active[i] = order[((window%n)*int64(k)+int64(i))%n]
	}
	return active
}

// WindowSkills returns the skills active in the pool of refresh step `step` under cfg: sample.skills (all
// six when empty; tool_use in the tools setting) taken sample.skills_per_window at a time, either in the
// list's own order (sample.skill_order = round_robin, the authors' rotation) or in a seeded shuffle of it
// (seeded). The error names the key when sample.skills is invalid.
func WindowSkills(cfg *config.Config, step int64) ([]string, error) {
	list, err := cfg.SkillList()
	if err != nil {
		return nil, err
	}
	if cfg.Sample.SkillOrder != config.SkillsRoundRobin {
		list = shuffled(list, cfg.Seed)
	}
	return rotate(list, cfg.PoolIndex(step), cfg.Sample.SkillsPerWindow), nil
}

// SlotSkill returns the skill of slot i: the active skills in turn, so envs_per_step slots are spread
// evenly (24 slots over 3 skills gives 8 each).
func SlotSkill(active []string, slot int) string { return active[slot%len(active)] }

// drawKey orders documents for a (seed, step) draw: the first 8 bytes of SHA-256 of the two and the doc
// id. Lower keys are drawn first; ties cannot happen between distinct doc ids in practice.
func drawKey(seed, step int64, docID string) uint64 {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%d\x00%s", seed, step, docID)))
	return binary.BigEndian.Uint64(sum[:8])
}

// skillDomains maps a skill to the corpus domains that suit it, best first. A document with an empty
// domain suits every games skill.
var skillDomains = map[string][]string{
	schemas.SkillMath:     {"math"},
	schemas.SkillLogic:    {"logic", "math"},
	schemas.SkillSpatial:  {"geometry", "math", "science"},
	schemas.SkillPattern:  {"math", "code"},
	schemas.SkillOptimize: {"optimization", "math", "science"},
	schemas.SkillCausal:   {"science"},
	schemas.SkillToolUse:  {"code"},
}

// suits reports how well a document's domain fits a skill: 0 is the best domain, larger is worse, and
// -1 means unsuitable (code documents for games skills other than those naming code, anything but code
// for tool use).
func suits(skill, domain string) int {
	if schemas.IsToolSkill(skill) {
		skill = schemas.SkillToolUse // every tool skill reads documents as tool_use does
	}
	if domain == "" {
		if skill == schemas.SkillToolUse {
			return -1
		}
		return len(skillDomains[skill])
	}
	for i, d := range skillDomains[skill] {
		if d == domain {
			return i
		}
	}
	if skill == schemas.SkillToolUse || domain == "code" {
		return -1
	}
	return len(skillDomains[skill]) + 1
}
