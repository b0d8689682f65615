package schemas

import "strings"

// TurnRow is one Agent turn of an episode: the observation shown, the action taken and the env's answer
// (table `turns`, partitioned by step).
type TurnRow struct {
	// Step is the training step.
	Step int64 `parquet:"step"`
	// EpisodeID references episodes.episode_id.
	EpisodeID string `parquet:"episode_id"`
	// EnvID is the environment played (denormalised for grouping).
	EnvID string `parquet:"env_id"`
	// Turn numbers the turns of the episode from 0.
	Turn int32 `parquet:"turn"`
	// Observation is the text the Agent saw before acting.
	Observation string `parquet:"observation"`
	// Action is the parsed action (games) or the tool call as JSON (tools); empty on a parse error.
	Action string `parquet:"action"`
	// ParseError says why the Agent's answer could not be parsed; empty when it was. One that starts
	// with MaskedTurnPrefix marks a turn that was played but leaves the loss (its tokens get loss mask 0).
	ParseError string `parquet:"parse_error"`
	// Reward is the env's reward for this step (finite).
	Reward float64 `parquet:"reward"`
	// Done is true when the env ended the episode at this step: Gymnasium's terminated or truncated (an
	// old 4-tuple program's done).
	Done bool `parquet:"done"`
	// Truncated is true when the env ended the episode by truncating it (Gymnasium's truncated, its own
	// time limit) without terminating it; so a done turn terminated the episode exactly when Truncated
	// is false. Always false for a program in the old 4-tuple shape. Schema version 2 (version 1 rows
	// read false).
	Truncated bool `parquet:"truncated"`
	// Info is the env's info dict as JSON.
	Info string `parquet:"info"`
	// CallID references the Agent's llm_calls row for this turn.
	CallID string `parquet:"call_id"`
}

// MaskedTurnPrefix starts the parse_error of a turn that leaves the loss: a tools turn under
// rollout.malformed_tool_call mask whose <tool_call> gave no call (the env still stepped on its text).
const MaskedTurnPrefix = "masked from the loss: "

// Masked reports whether the turn leaves the loss (MaskedTurnPrefix).
func (r TurnRow) Masked() bool { return strings.HasPrefix(r.ParseError, MaskedTurnPrefix) }

// TurnsSpec describes the turns table. Version 2 added truncated; version 1 rows read false there.
var TurnsSpec = register("turns", 2, true, TurnRow{})

// Validate implements Row.
func (r TurnRow) Validate() error {
	c := checks{table: "turns"}
	c.nonNegative("step", r.Step)
	c.required("episode_id", r.EpisodeID)
	c.nonNegative("turn", int64(r.Turn))
	c.finite("reward", r.Reward)
	c.utf8("observation", r.Observation)
	c.utf8("action", r.Action)
	return c.err
}
