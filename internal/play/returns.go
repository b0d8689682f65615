package play

import "github.com/spadekit/spade/internal/config"

// EpisodeReturn returns an episode's return (episodes.return) under rollout.return, from the rewards of
// its env steps in turn order:
//
//	terminal: R = clip(r_T, −1, 1) when the env terminated the episode at its last step T, else R = 0
//	sum:      R = r_1 + r_2 + … + r_T
//
// terminal is the authors' episode outcome (spade/core/utils/rewards.py, episode_reward): only a
// finished game scores, and its score is the final step's reward. sum adds the rewards left to right,
// so runs recorded with it (testdata/sample-run-v1) replay to the same bits. Edge cases: no steps (the env failed to load or reset, the Agent's first call
// failed) gives 0 under both; an episode that the env truncated (Gymnasium's truncated without
// terminated: the authors' episode_reward takes terminated alone), that ran out of turns or context, or ended in env_error,
// timeout or agent_error, is not terminated and scores 0 under terminal, its partial sum under sum.
func EpisodeReturn(kind config.ReturnKind, rewards []float64, terminated bool) float64 {
	if kind == config.ReturnTerminal {
		if !terminated || len(rewards) == 0 {
			return 0
		}
		return min(1, max(-1, rewards[len(rewards)-1]))
	}
	total := 0.0
	for _, r := range rewards {
		total += r
	}
	return total
}
