package config

import "github.com/spadekit/spade/schemas"

// Gate configures the acceptance checks (stages/gate): which checks decide whether a candidate program
// becomes an env of the pool, and how often a failed slot is asked again.
type Gate struct {
	// MaxAttempts is the most attempts of a slot, the first included. A slot whose candidate fails the
	// gate is regenerated (generate.regen) until one passes or this many failed (the authors'
	// collect_trajectories(max_attempts=5)).
	MaxAttempts int `json:"max_attempts" range:">=1"`
	// ResetSeeds is the number of seeds the reset check plays to test determinism. Each seed resets two
	// instances; the tools setting uses at least 5.
	ResetSeeds int `json:"reset_seeds" range:">=1"`
	// Checks is the check set that decides acceptance: official or strict. official is the authors' gate
	// (load; their validation of a loaded game: reset(seed=42), three \boxed{} steps with their types and
	// a reward in [-10, 10], reset(seed=123); then reset and three steps without an exception; tools: plus
	// the tool checks and the screen; under generate.contract legacy without the validation); strict adds
	// determinism, smoke probes, the trivial and hint-leak probes.
	Checks GateChecks `json:"checks"`
	// Probes is where the strict gate's trivial check takes its first actions: drawn (eight per candidate,
	// from a space of Agent-like actions too large to enumerate, seeded by the run, step and env, and named
	// when they find the env trivial) or fixed (the empty string, a number, a long string, garbage and the
	// hint, a public list a program can recognise; runs recorded before drawn probes existed replay with
	// it). The smoke check plays the fixed ones under both.
	Probes GateProbes `json:"probes"`
	// MaxTurnDelaySeconds caps the waits of the strict gate's trivial and hint-leak probes. From the
	// second step on, each wait between a probe's reset and its step is drawn from the Agent's turn
	// latencies recorded in llm_calls (the latest earlier step that has them), so a program cannot tell
	// the gate from an Agent by how soon its step follows its reply; a drawn wait longer than this is
	// cut to it. 0 keeps the waits of 2 to 4 ms that the first step uses.
	MaxTurnDelaySeconds float64 `json:"max_turn_delay_seconds" range:">=0"`
	// LoadTimeoutSeconds bounds a candidate's load, the creation of its instances and their resets while
	// the gate checks it, in seconds (the authors give their validation 60, play 30:
	// sandbox.load_timeout_seconds). 0 uses sandbox.load_timeout_seconds.
	LoadTimeoutSeconds int `json:"load_timeout_seconds" range:">=0"`
	// Shape is what the official checks under the gymnasium contract ask of a program's form: authors
	// refuses what the authors' loader refuses (an env class not named ...Env, a reset returning
	// (observation, None), the old 4-tuple step); lenient reads those anyway, as spade's gate did, and the
	// programs play (the 4-tuple's done is terminated). authors in the games presets; the tools presets
	// stay lenient, since the authors' tools loader checks the form of its ToolUseBaseEnv subclasses.
	Shape GateShape `json:"shape"`
	// ToolsChecks is what the official checks ask of a tools program beyond the games checks: authors or
	// spade. authors is the authors' tool-use validation: no tools() is required (a program without
	// get_tools() plays with no tools), and after their validation of the loaded program come their
	// reset gate (from the second pool on, a program whose every success criterion list,
	// _message_criteria, raises on the state reset(seed) builds at each of the seeds 0, 1 and 2 is
	// refused) and their LLM validator (the screen: the program's code alone, a \boxed{yes} or
	// \boxed{no} verdict; an empty answer, one without a box or a failed call accepts). spade asks for
	// tools() returning valid OpenAI function schemas, the same first observation and tools on two
	// instances for each reset seed, and a screen verdict per instruction.
	ToolsChecks GateToolsChecks `json:"tools_checks"`
}

func init() {
	registerEnum(GateChecksValues())
	registerEnum(GateProbesValues())
	registerEnum(GateShapeValues())
	registerEnum(GateToolsChecksValues())
}

// GateToolsChecks is gate.tools_checks: the official tools checks.
type GateToolsChecks string

// The official tools check sets.
const (
	// ToolsChecksAuthors is the authors' tool-use validation.
	ToolsChecksAuthors GateToolsChecks = "authors"
	// ToolsChecksSpade is spade's schema, determinism and per-instruction screen checks.
	ToolsChecksSpade GateToolsChecks = "spade"
)

// GateToolsChecksValues lists every official tools check set.
func GateToolsChecksValues() []GateToolsChecks {
	return []GateToolsChecks{ToolsChecksAuthors, ToolsChecksSpade}
}

// GateShape is gate.shape: whether the official checks hold a program to the authors' form.
type GateShape string

// The program forms.
const (
	// ShapeAuthors refuses what the authors' loader refuses.
	ShapeAuthors GateShape = "authors"
	// ShapeLenient reads the old forms and the unnamed env class anyway.
	ShapeLenient GateShape = "lenient"
)

// GateShapeValues lists every program form.
func GateShapeValues() []GateShape { return []GateShape{ShapeAuthors, ShapeLenient} }

// GateProbes is gate.probes: where the trivial check's first actions come from.
type GateProbes string

// The probe sources.
const (
	// ProbesDrawn draws Agent-like actions per candidate.
	ProbesDrawn GateProbes = "drawn"
	// ProbesFixed plays the fixed, public list alone.
	ProbesFixed GateProbes = "fixed"
)

// GateProbesValues lists every probe source.
func GateProbesValues() []GateProbes { return []GateProbes{ProbesDrawn, ProbesFixed} }

// GateChecks is gate.checks: which checks decide acceptance. The static check and the sandbox stay on
// in both.
type GateChecks string

// The gate check sets.
const (
	// GateOfficial is the authors' gate: load, reset, then step("1"), step("2"), step("test") without an
	// exception (tools: plus the tool checks and the screen).
	GateOfficial GateChecks = "official"
	// GateStrict adds determinism, smoke probes, the trivial and hint-leak probes.
	GateStrict GateChecks = "strict"
)

// GateChecksValues lists every check set.
func GateChecksValues() []GateChecks { return []GateChecks{GateOfficial, GateStrict} }

// validate has no rule beyond the declared ranges.
func (Gate) validate(*Config) error { return nil }

// presetGate is the authors' gate: the official checks, 5 attempts per slot, 3 reset seeds (and drawn
// probes, which only the strict checks play).
func presetGate(p presetSpec) Gate {
	g := Gate{MaxAttempts: 5, ResetSeeds: 3, Checks: GateOfficial, Probes: ProbesDrawn, MaxTurnDelaySeconds: 5, LoadTimeoutSeconds: 60,
		Shape: ShapeAuthors, ToolsChecks: ToolsChecksAuthors}
	if p.setting == schemas.SettingTools {
		// The authors' tools programs subclass their ToolUseBaseEnv, whose checks are the tools gate's
		// (gate.tools_checks); the form checks here are the games loader's.
		g.Shape = ShapeLenient
	}
	return g
}
