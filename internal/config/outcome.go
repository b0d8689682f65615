package config

import "github.com/spadekit/spade/schemas"

// Outcome is the one definition of an episode's outcome and of which episodes an env's rates count. The
// Designer's reward (stages/regret, through internal/outcome) and every audit model of sql/ (through
// sql/env_outcomes.sql and its DuckDB variables) read these two keys, so the Designer is rewarded on the
// numbers it is audited on.
type Outcome struct {
	// ExcludeEndedBy lists, comma-separated, the ended_by values of the episodes an env's rates leave out.
	// They are left out of its counts, solve rates and mean outcomes (default "env_error,timeout"). Both
	// say that the env program failed (it raised, broke the contract, or overran its sandbox deadline),
	// not the Agent: counting them as failures would push the solve rate of a flaky env towards 0 and pay
	// the anchor for brittleness. max_turns, truncated and agent_error stay in: running out of turns or
	// of answer tokens is the Agent failing, and an agent_error is the Agent's side too. An empty value
	// counts every episode.
	ExcludeEndedBy string `json:"exclude_ended_by"`
	// Value is what an episode's outcome o is: return or success. return is episodes.return, as
	// rollout.return defines it; success is 1 for a solved episode, else 0. The mean r̄ of o is the hint
	// regret's r̄(e) and r̄(e|h); the solve rate is always the success fraction.
	Value OutcomeValue `json:"value"`
}

func init() { registerEnum(OutcomeValueValues()) }

// OutcomeValue is outcome.value: what an episode's outcome o is (see Outcome).
type OutcomeValue string

// The outcome values.
const (
	// OutcomeReturn is the episode's return (episodes.return).
	OutcomeReturn OutcomeValue = "return"
	// OutcomeSuccess is 1 for a solved episode (episodes.success), else 0.
	OutcomeSuccess OutcomeValue = "success"
)

// OutcomeValueValues lists every outcome value.
func OutcomeValueValues() []OutcomeValue { return []OutcomeValue{OutcomeReturn, OutcomeSuccess} }

// DefaultExcludeEndedBy is outcome.exclude_ended_by's default: the episodes in which the env, not the
// Agent, failed.
const DefaultExcludeEndedBy = string(schemas.EndedEnvError) + "," + string(schemas.EndedTimeout)

// Excluded returns the ended_by values of outcome.exclude_ended_by, or an error naming the key and the
// valid values.
func (o Outcome) Excluded() ([]schemas.EndedBy, error) {
	var out []schemas.EndedBy
	for _, part := range SplitList(o.ExcludeEndedBy) {
		e, err := schemas.ParseEndedBy(part)
		if err != nil {
			return nil, invalidf("config: key \"outcome.exclude_ended_by\": %v", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// validate checks outcome.exclude_ended_by (Excluded).
func (o Outcome) validate(*Config) error {
	_, err := o.Excluded()
	return err
}

// presetOutcome counts every episode but those whose env failed, on their return.
func presetOutcome(presetSpec) Outcome {
	return Outcome{ExcludeEndedBy: DefaultExcludeEndedBy, Value: OutcomeReturn}
}
