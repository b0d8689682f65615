package sample

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/spadekit/spade/schemas"
)

// SkillOrder returns the run's fixed rotation of the six games skills: schemas.Skills shuffled by a
// PCG generator seeded with the run seed.
func SkillOrder(seed int64) []string {
	order := append([]string(nil), schemas.Skills...)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5350414445)) // "SPADE"
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// ActiveSkills returns the k skills active in refresh window w (w = step / refresh_every): the window
// takes the next k skills of SkillOrder(seed), wrapping around, so with k = 3 every skill is active in
// every other window and all six appear within 6/gcd(6, k) windows. k is clamped to 1..6.
func ActiveSkills(seed int64, window int64, k int) []string {
	order := SkillOrder(seed)
	k = max(1, min(k, len(order)))
	active := make([]string, k)
	for i := range k {
		active[i] = order[(int(window%int64(len(order)))*k+i)%len(order)]
	}
	return active
}

// SlotSkill returns the skill of slot i: the active skills in turn, so envs_per_step slots are spread
// evenly (24 slots over 3 skills gives 8 each).
func SlotSkill(active []string, slot int) string { return active[slot%len(active)] }

// drawKey orders documents for a (seed, step, slot) draw: the first 8 bytes of SHA-256 of the three
// and the doc id. Lower keys are drawn first; ties cannot happen between distinct doc ids in practice.
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
