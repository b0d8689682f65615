package generate

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/spadekit/spade/schemas"
)

// The catalogues the separate-mode prompts draw from (the no-corpus games prompt and the tools prompt):
// the facts follow the authors' prompts (six games skills with example games, six tool skills, ten
// application domains, four task types in a 3:2:1:1 rotation); the wording is ours.

// exampleGames lists, per games skill, interactive games the no-corpus prompt offers as starting
// points (all shown, in this order).
var exampleGames = map[string][]string{
	schemas.SkillMath: {
		"a market over several rounds: buy and sell goods whose prices drift with a hidden trend, reach a target purse",
		"a number labyrinth: each room applies an arithmetic operation to a running total; find a route that ends on the target",
		"a weighing puzzle: balance loads on a beam by placing and removing weights turn by turn",
		"a budgeted auction: bid on lots whose true values are revealed only after the sale",
	},
	schemas.SkillLogic: {
		"an investigation: question witnesses, search rooms, collect evidence, then name the culprit",
		"a yes/no oracle: ask questions that narrow down a hidden assignment of people to houses",
		"a locked-room sequence: examining each object yields the clue that opens the next",
		"a knights-and-knaves island: interview residents and deduce who always lies",
	},
	schemas.SkillSpatial: {
		"a warehouse: push crates onto marked squares without trapping them in corners",
		"a dark maze: move through a grid, sense nearby walls, find the exit before the lamp runs out",
		"a rover on a rocky field: steer around obstacles with a limited fuel budget",
		"a room planner: place furniture one piece at a time so that every constraint holds",
	},
	schemas.SkillPattern: {
		"a colour-code breaker: guess a hidden code and read right-place and wrong-place feedback",
		"a hidden-mine field: uncover cells and use the neighbour counts to mark the mines",
		"a substitution cipher: visit places that each reveal one letter of the key, then decode the message",
		"a sequence machine: feed inputs and infer the rule that transforms them",
	},
	schemas.SkillOptimize: {
		"a packing run: items arrive one by one; keep or skip each to maximise value under a weight limit",
		"a job shop: assign arriving jobs to machines to finish everything as early as possible",
		"a portfolio over rounds: reallocate money as conditions change, reach a target value",
		"a production line: configure stations across turns to maximise output before a deadline",
	},
	schemas.SkillCausal: {
		"a laboratory: choose which variables to set each turn and identify the hidden causal rule",
		"a broken machine: test components in an order of your choosing to find the faulty one",
		"an outbreak: apply interventions, observe case counts, locate the source",
		"a circuit bench: flip switches, read the lamps, find the miswired gate",
	},
}

// ToolSkill is one of the six tool-use skills a tools prompt targets (rotated per call).
type ToolSkill struct {
	Name        string
	Description string
	Examples    []string
}

// toolSkills are the six tool-use skills, in a fixed order.
var toolSkills = []ToolSkill{
	{"API orchestration", "chain several calls that each change the backend state", []string{
		"open a folder, make a subfolder, move files into it",
		"look up a balance, transfer money, confirm the new balance",
		"find a product, hold it, confirm the hold, issue the invoice",
	}},
	{"data retrieval", "find facts with query tools first, then act on exactly what was found", []string{
		"list a folder, find the right file, read a value from it",
		"look up a customer, fetch their orders, pick the newest",
		"query records that match a condition and report an aggregate",
	}},
	{"state modification", "a series of changes where each depends on the state the previous one left", []string{
		"create an account, grant permissions, add it to a group, check membership",
		"build a folder tree, then move and rename files inside it",
		"set up a portfolio: read prices, place orders, confirm positions",
	}},
	{"error recovery", "survive failing calls: check the state before acting and retry with corrected arguments", []string{
		"a move fails because the file is elsewhere: search for it and retry",
		"an action is refused for lack of rights: obtain them, then retry",
		"check whether a folder exists before creating it",
	}},
	{"tool selection", "pick the right tool among similar ones from the current state", []string{
		"check where you are before deciding to move or act in place",
		"read an item's kind, then choose the tool that handles that kind",
		"decide between creating and updating a record after looking it up",
	}},
	{"multi-step workflows", "ordered procedures whose later steps use the results of earlier ones", []string{
		"catalogue search, stock check, reservation, payment, confirmation",
		"status check, configuration, activation, test, log entry",
		"connect, query, filter, transform, write, validate",
	}},
}

// toolDomains are the application domains a tools prompt builds its backend in (rotated per call).
var toolDomains = []string{
	"online retail: orders, items, refunds and shipments",
	"travel: flight and hotel search, booking, payment and cancellation",
	"a mobile carrier's accounts: plans, lines, bills and data add-ons",
	"personal banking: accounts, transfers, cards and invoices",
	"a calendar assistant: events, invitations and reminders",
	"a file system: files and folders, moving, copying and searching",
	"a shopping cart: catalogue, cart, checkout and coupons",
	"a support desk: tickets, status, assignment and notes",
	"a smart home: lights, thermostat, locks and scenes",
	"a task tracker: tasks, assignees, status and due dates",
}

// TaskType is a variant of the tools task (rotated per call).
type TaskType struct {
	// Name is execute, read_then_write, missing_value or irrelevant.
	Name string
	// Rule is what the variant requires of the instructions.
	Rule string
}

// taskTypes are the task variants; rotation repeats them 3:2:1:1 (execute most often).
var taskTypes = []TaskType{
	{"execute", "Plain execution: each instruction names what to do, and the Agent calls the right tools in the right order; each condition checks the state that results."},
	{"read_then_write", "Read, decide, write: at least one instruction makes the Agent query the state first, apply a condition to what it reads (for example every order above some amount) and then make the writes that follow from it; its condition checks the final state, not merely that a tool was called."},
	{"missing_value", "A value to discover: at least one instruction refers to something the user does not spell out (their latest order, the overdue bill), which the Agent must look up before writing; the writing tool answers a wrong or guessed value with an error, so a made-up argument never meets the condition."},
	{"irrelevant", "A request to decline: exactly one instruction asks for something none of the domain's tools can do; add a tool decline_request(reason: string) that records the refusal and moves on, make that instruction's condition true only once it is called, and offer no other tool that could seem to fulfil the request."},
}

var taskTypeRotation = []int{0, 0, 0, 1, 1, 2, 3}

// drawIndex returns a deterministic index in [0, n) for one Designer call and one choice (what).
func drawIndex(seed, step int64, slot, attempt int32, what string, n int) int {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%d\x00%d\x00%d\x00%s", seed, step, slot, attempt, what))
	return int(binary.BigEndian.Uint64(sum[:8]) % uint64(n))
}

// ToolSkillOf returns the catalogue entry of one of schemas.ToolSkills (the two lists share their order),
// and false for any other skill.
func ToolSkillOf(skill string) (ToolSkill, bool) {
	for i, s := range schemas.ToolSkills {
		if s == skill {
			return toolSkills[i], true
		}
	}
	return ToolSkill{}, false
}

// ToolsRotation returns the tool skill, domain and task type of one tools Designer call, drawn from
// (seed, step, slot, attempt), so every call (a resampled attempt too) gets its own combination and a
// replay gets the same one.
func ToolsRotation(seed, step int64, slot, attempt int32) (ToolSkill, string, TaskType) {
	skill := toolSkills[drawIndex(seed, step, slot, attempt, "tool-skill", len(toolSkills))]
	domain := toolDomains[drawIndex(seed, step, slot, attempt, "domain", len(toolDomains))]
	task := taskTypes[taskTypeRotation[drawIndex(seed, step, slot, attempt, "task-type", len(taskTypeRotation))]]
	return skill, domain, task
}
