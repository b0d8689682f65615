package gate

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// The check names (schemas.GateResultRow.Check); the order they run in is the check tables'
// (gamesChecks, toolsChecks).
const (
	CheckStatic          = "static"
	CheckLoad            = "load"
	CheckInstantiate     = "instantiate"
	CheckReset           = "reset"
	CheckSmoke           = "smoke"
	CheckTrivial         = "trivial"
	CheckHintLeak        = "hint_leak"
	CheckToolsSchema     = "tools_schema"
	CheckToolsReset      = "tools_reset"
	CheckToolsConditions = "tools_conditions"
	CheckToolsScreen     = "tools_screen"
	CheckResetGate       = "reset_gate"
	CheckSteps           = "steps"
	CheckValidate        = "validate"
)

// GamesChecks and ToolsChecks list the checks of each setting in order; they are the names of
// the check tables (CheckNames).
var (
	GamesChecks = CheckNames(schemas.SettingGames)
	ToolsChecks = CheckNames(schemas.SettingTools)
)

// CheckResult is the verdict of one check.
type CheckResult struct {
	// Check is the check's name.
	Check string
	// Passed is true when the check passed.
	Passed bool
	// Skipped is true when the check did not run; Error then says why.
	Skipped bool
	// Error says why the check failed (or was skipped).
	Error string
	// Duration is the check's wall time.
	Duration time.Duration
}

// Verdict is the outcome of every check on one program.
type Verdict struct {
	// Accepted is true when every check passed or was skipped for want of a screen model.
	Accepted bool
	// Class is the env class found by the load check.
	Class string
	// Contract is the shape of the program's step (gymnasium: the 5-tuple, legacy: the old 4-tuple) as
	// the first step a check played returned it; empty when no step returned.
	Contract schemas.EnvContract
	// Results holds one entry per check of the setting, in order.
	Results []CheckResult
	// Err is set when the checks could not run for a reason that is not the program's (the
	// sandbox could not start a worker, the context ended): the program was not judged.
	Err error
	// seedIndex maps each reset seed the checks drew to its index among its check's seeds.
	seedIndex map[int64]int
}

// Failure returns the first failed check, or nil when the program was accepted.
func (v Verdict) Failure() *CheckResult {
	for i := range v.Results {
		if !v.Results[i].Passed && !v.Results[i].Skipped {
			return &v.Results[i]
		}
	}
	return nil
}

// FailureText is the message handed back to the Designer: the failed check and its error, with
// each gate seed written as its index among its check's seeds ("reset(seed=0)" is the check's
// first seed). The Designer is the model being trained: shown the gate's seeds, it could learn to
// recognise them. The gate_results rows keep the seeds themselves.
func (v Verdict) FailureText() string {
	if f := v.Failure(); f != nil {
		return fmt.Sprintf("gate check %q failed: %s", f.Check, v.seedsAsIndices(f.Error))
	}
	return ""
}

var seedPattern = regexp.MustCompile(`\bseed([= ])(\d+)`)

// seedsAsIndices rewrites the gate seeds in text (seed=N, seed N) as their indices.
func (v Verdict) seedsAsIndices(text string) string {
	return seedPattern.ReplaceAllStringFunc(text, func(m string) string {
		sub := seedPattern.FindStringSubmatch(m)
		seed, err := strconv.ParseInt(sub[2], 10, 64)
		if index, ok := v.seedIndex[seed]; ok && err == nil {
			return "seed" + sub[1] + strconv.Itoa(index)
		}
		return m
	})
}

// gateCheck is one row of a check table: a check's name and the function that runs it.
type gateCheck struct {
	name string
	run  checkFunc
}

// checkFunc runs one check on the program being judged. It returns a reason when the check is
// skipped and an error when the program fails it; what later checks need (the loaded program,
// the first observations, the tool schemas) passes through the checker.
type checkFunc func(c *checker) (skipReason string, err error)

// gamesChecks is the games setting's check table: Check runs its rows in this order, and every
// other place that lists the order (GamesChecks, the CLI's description, the README's table)
// derives from it or is tested against it.
var gamesChecks = []gateCheck{
	{CheckStatic, (*checker).checkStatic},
	{CheckLoad, (*checker).checkLoad},
	{CheckInstantiate, (*checker).checkInstantiate},
	{CheckReset, (*checker).checkReset},
	{CheckSmoke, (*checker).checkSmoke},
	{CheckTrivial, (*checker).checkTrivial},
	{CheckHintLeak, (*checker).checkHintLeak},
}

// toolsChecks is the tools setting's check table: the games checks, then the tool-use ones
// (SPADE §3.3).
var toolsChecks = append(append([]gateCheck{}, gamesChecks...),
	gateCheck{CheckToolsSchema, (*checker).checkToolsSchema},
	gateCheck{CheckToolsReset, (*checker).checkToolsReset},
	gateCheck{CheckToolsConditions, (*checker).checkToolsConditions},
	gateCheck{CheckToolsScreen, (*checker).checkToolsScreen},
)

// officialGamesChecks is the check table of gate.checks = official, the authors' gate: the program
// loads, an instance is made (Cls(max_turns=N)), it passes the authors' validation of a loaded game
// (validate: _validate_game_execution) and then their validate_game's plays (steps: reset, then
// step("1"), step("2"), step("test") raise nothing). The static check stays on (an addition that does
// not change the method: it keeps hostile code out).
var officialGamesChecks = []gateCheck{
	{CheckStatic, (*checker).checkStatic},
	{CheckLoad, (*checker).checkLoad},
	{CheckInstantiate, (*checker).checkInstantiate},
	{CheckValidate, (*checker).checkValidate},
	{CheckSteps, (*checker).checkSteps},
}

// legacyOfficialGamesChecks is the official games table under generate.contract = legacy: the gate as
// it was before the authors' validation was added (no validate check), which runs recorded then replay.
var legacyOfficialGamesChecks = []gateCheck{
	{CheckStatic, (*checker).checkStatic},
	{CheckLoad, (*checker).checkLoad},
	{CheckInstantiate, (*checker).checkInstantiate},
	{CheckSteps, (*checker).checkSteps},
}

// officialToolsChecks adds spade's tool-use checks to the official games table (gate.tools_checks
// spade): the tool schemas, a determinism check of reset and the tools, and the per-instruction screen.
var officialToolsChecks = withOfficialTools(officialGamesChecks)

// legacyOfficialToolsChecks is officialToolsChecks under generate.contract = legacy.
var legacyOfficialToolsChecks = withOfficialTools(legacyOfficialGamesChecks)

// authorsToolsChecks is the official tools table under gate.tools_checks authors: the official games
// table (the authors' validation of a loaded program and validate_game's plays), then their reset gate
// and their LLM validator (the screen), as their tool-use generation runs them.
var authorsToolsChecks = withAuthorsTools(officialGamesChecks)

// legacyAuthorsToolsChecks is authorsToolsChecks under generate.contract = legacy.
var legacyAuthorsToolsChecks = withAuthorsTools(legacyOfficialGamesChecks)

// withOfficialTools returns an official games table followed by spade's tool-use checks.
func withOfficialTools(games []gateCheck) []gateCheck {
	return append(append([]gateCheck{}, games...),
		gateCheck{CheckToolsSchema, (*checker).checkToolsSchema},
		gateCheck{CheckToolsReset, (*checker).checkToolsReset},
		gateCheck{CheckToolsScreen, (*checker).checkToolsScreen},
	)
}

// withAuthorsTools returns an official games table followed by the authors' tool-use checks.
func withAuthorsTools(games []gateCheck) []gateCheck {
	return append(append([]gateCheck{}, games...),
		gateCheck{CheckResetGate, (*checker).checkResetGate},
		gateCheck{CheckToolsScreen, (*checker).checkToolsScreen},
	)
}

// checkTable returns the check table of a setting (games for anything but tools), check set (strict
// for anything but official), env contract (gymnasium for anything but legacy; it changes the
// official tables only) and official tools checks (gate.tools_checks; spade for anything but authors,
// read for official tools only).
func checkTable(setting schemas.Setting, checks config.GateChecks, contract schemas.EnvContract, tools config.GateToolsChecks) []gateCheck {
	official, legacy := checks == config.GateOfficial, contract == schemas.ContractLegacy
	authors := tools == config.ToolsChecksAuthors
	switch {
	case setting == schemas.SettingTools && official && authors && legacy:
		return legacyAuthorsToolsChecks
	case setting == schemas.SettingTools && official && authors:
		return authorsToolsChecks
	case setting == schemas.SettingTools && official && legacy:
		return legacyOfficialToolsChecks
	case setting == schemas.SettingTools && official:
		return officialToolsChecks
	case setting == schemas.SettingTools:
		return toolsChecks
	case official && legacy:
		return legacyOfficialGamesChecks
	case official:
		return officialGamesChecks
	}
	return gamesChecks
}

// CheckNames returns the names of the setting's strict checks in the order Check runs them (games
// for anything but tools): the order of the gate_results rows of one candidate attempt.
func CheckNames(setting schemas.Setting) []string {
	return CheckNamesFor(setting, config.GateStrict)
}

// CheckNamesFor returns the names of the checks of a setting and check set (gate.checks) under the
// gymnasium contract, in order.
func CheckNamesFor(setting schemas.Setting, checks config.GateChecks) []string {
	return CheckNamesOf(setting, checks, schemas.ContractGymnasium)
}

// CheckNamesOf returns the names of the checks of a setting, check set and env contract
// (generate.contract), in order, with spade's official tools checks.
func CheckNamesOf(setting schemas.Setting, checks config.GateChecks, contract schemas.EnvContract) []string {
	return CheckNamesWith(setting, checks, contract, config.ToolsChecksSpade)
}

// CheckNamesWith returns the names of the checks of a setting, check set, env contract and official
// tools check set (gate.tools_checks), in order.
func CheckNamesWith(setting schemas.Setting, checks config.GateChecks, contract schemas.EnvContract, tools config.GateToolsChecks) []string {
	table := checkTable(setting, checks, contract, tools)
	names := make([]string, len(table))
	for i, chk := range table {
		names[i] = chk.name
	}
	return names
}
