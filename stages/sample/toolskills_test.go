package sample_test

import (
	"slices"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/sample"
)

// In the tools presets every pool has the six tool skills, all active, one per slot in turn (the
// authors' skills[i % 6]): 24 slots give each tool skill 4 slots, the 4B recipe's 16 slots give the first
// four skills 3 and the last two 2, and the same at every pool.
func TestToolsPresetsSpreadTheSixToolSkillsOverTheSlots(t *testing.T) {
	for preset, perSkill := range map[string][]int{"qwen3-8b-tools": {4, 4, 4, 4, 4, 4}, "qwen3-4b-tools": {3, 3, 3, 3, 2, 2}} {
		cfg, err := config.Preset(preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []int64{0, int64(cfg.Sample.RefreshEvery)} {
			active, err := sample.WindowSkills(cfg, step)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(active, schemas.ToolSkills) {
				t.Fatalf("%s step %d: active skills %v, want the six tool skills in order", preset, step, active)
			}
			count := map[string]int{}
			for slot := range cfg.Sample.EnvsPerStep {
				count[sample.SlotSkill(active, slot)]++
			}
			for i, skill := range schemas.ToolSkills {
				if count[skill] != perSkill[i] {
					t.Errorf("%s: %s has %d slots, want %d", preset, skill, count[skill], perSkill[i])
				}
			}
		}
	}
	games, err := config.Preset("qwen3-8b-games")
	if err != nil {
		t.Fatal(err)
	}
	if err := games.Set("sample.skills", schemas.SkillDataRetrieval); err == nil {
		if _, err := games.SkillList(); err == nil {
			t.Fatal("a tool skill is accepted in the games setting")
		}
	}
}
