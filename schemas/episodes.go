package schemas

// EpisodeRow is one play of one environment by the Agent (table `episodes`, partitioned by step).
type EpisodeRow struct {
	// Step is the training step the episode was played in.
	Step int64 `parquet:"step"`
	// PoolStep is the refresh step of the env's pool.
	PoolStep int64 `parquet:"pool_step"`
	// EnvID is the environment played.
	EnvID string `parquet:"env_id"`
	// Skill is the environment's skill (denormalised for grouping).
	Skill string `parquet:"skill"`
	// EpisodeID is unique within the run.
	EpisodeID string `parquet:"episode_id"`
	// Hinted is true when the Agent was shown the hint (rollout.hint_placement: the first observation or
	// the system prompt).
	Hinted bool `parquet:"hinted"`
	// Index numbers the episode within its (env, hinted) group, 0 .. n−1 (n: rollout.group_size, or the
	// step's hinted plays).
	Index int32 `parquet:"index"`
	// Seed is the seed passed to reset.
	Seed int64 `parquet:"seed"`
	// Return is the episode's return under rollout.return: the sum of the env's rewards (sum), or the
	// last reward clipped to [−1, 1] when the env ended the episode and 0 otherwise (terminal).
	Return float64 `parquet:"return"`
	// Success is info["success"] at termination, else terminal reward >= 1; false unless the env
	// terminated the episode (ended_by done).
	Success bool `parquet:"success"`
	// Turns is the number of env steps taken, 0 .. rollout.max_turns.
	Turns int32 `parquet:"turns"`
	// EndedBy is done (the env terminated the episode), env_truncated (the env truncated it), max_turns,
	// truncated (the Agent's answer was cut at max_tokens), env_error, timeout or agent_error.
	EndedBy EndedBy `parquet:"ended_by"`
	// Error describes an env_error, timeout or agent_error, or the exception (or malformed return) of
	// the step that ended a done episode with reward −1 under rollout.env_error score; empty otherwise.
	Error string `parquet:"error"`
	// Tokens is the total prompt+completion tokens of the episode's Agent calls.
	Tokens int64 `parquet:"tokens"`
	// EnvCPUSeconds is the CPU time the env's process spent on the episode, in seconds.
	EnvCPUSeconds float64 `parquet:"env_cpu_seconds"`
	// NeutralizedMarkers is how many control markers of the chat template (<|im_end|>, <tool_call>,
	// </think>, …) the env's observations and tool results and the hint spelled, each broken by
	// play.Neutralize before the Agent's conversation was rendered or tokenized; 0 for an env that never
	// spelled one. Schema version 2 (version 1 rows read 0).
	NeutralizedMarkers int32 `parquet:"neutralized_markers"`
}

// EpisodesSpec describes the episodes table. Version 2 added neutralized_markers; version 1 rows read
// with 0 there.
var EpisodesSpec = register("episodes", 2, true, EpisodeRow{})

// Validate implements Row.
func (r EpisodeRow) Validate() error {
	c := checks{table: "episodes"}
	c.nonNegative("step", r.Step)
	c.required("env_id", r.EnvID)
	c.required("episode_id", r.EpisodeID)
	c.finite("return", r.Return)
	c.nonNegative("turns", int64(r.Turns))
	enum(&c, "ended_by", r.EndedBy, EndedByValues())
	c.nonNegative("tokens", r.Tokens)
	c.nonNegative("neutralized_markers", int64(r.NeutralizedMarkers))
	return c.err
}
