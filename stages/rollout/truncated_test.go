package rollout_test

import (
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/schemas"
)

// counterEnv ends with success at its third step; its observations say how many steps it took.
const counterEnv = `class Counter:
    def reset(self, seed):
        self.n = 0
        return "Say a number."

    def step(self, action):
        self.n += 1
        if self.n == 3:
            return "Done.", 1.0, True, False, {"success": True}
        return "steps=%d" % self.n, 0.0, False, False, {}
`

// An answer the server cut at max_tokens (finish_reason length) ends its play there, ended_by
// truncated, without stepping the env on half an answer; the turn says why and keeps its call, so GRPO
// still has the tokens. Plays whose answers end normally run on.
func TestRolloutEndsAPlayAtATruncatedAnswer(t *testing.T) {
	env := envRow(0, 0, counterEnv, "say 7", schemas.SkillMath, "games")
	script := func(body *llm.ChatRequestBody) llmtest.Reply {
		answered := 0
		for _, m := range body.Messages {
			if m.Role == "assistant" {
				answered++
			}
		}
		if answered == 1 && body.Messages[len(body.Messages)-1].Content == "steps=1" && body.Seed%2 == 0 {
			return llmtest.Reply{Text: "<action>7</action> and then I would", FinishReason: "length"}
		}
		return llmtest.Reply{Text: "<action>7</action>"}
	}
	f := newScriptedFixture(t, "games", []schemas.EnvRow{env}, script, func(c *config.Config) {
		c.Rollout.GroupSize, c.Rollout.HintedGroupSize = 6, 1
	})
	f.rollout(t, 0)
	turns := map[string][]schemas.TurnRow{}
	for _, tr := range readStep[schemas.TurnRow](t, f, "turns", 0) {
		turns[tr.EpisodeID] = append(turns[tr.EpisodeID], tr)
	}
	ended := map[schemas.EndedBy]int{}
	for _, e := range readStep[schemas.EpisodeRow](t, f, "episodes", 0) {
		ended[e.EndedBy]++
		ts := turns[e.EpisodeID]
		switch e.EndedBy {
		case schemas.EndedTruncated:
			last := ts[len(ts)-1]
			if len(ts) != 2 || e.Turns != 2 || e.Success || e.Return != 0 || last.ParseError != play.TruncatedAnswer || last.Action != "" || last.CallID == "" || last.Reward != 0 {
				t.Errorf("truncated play %s: %d turns (row %d), success %v, return %v, last turn %+v; want 2 turns, the second unplayed with its call", e.EpisodeID, len(ts), e.Turns, e.Success, e.Return, last)
			}
		case schemas.EndedDone:
			if len(ts) != 3 || !e.Success {
				t.Errorf("a play whose answers ended normally: %d turns, success %v; want 3 and success", len(ts), e.Success)
			}
		default:
			t.Errorf("play %s ended %s", e.EpisodeID, e.EndedBy)
		}
	}
	if ended[schemas.EndedTruncated] == 0 || ended[schemas.EndedDone] == 0 {
		t.Errorf("ended_by counts %v: want both truncated and done plays", ended)
	}
}
