package rollout_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
)

// Test environments in the Designer's format, played through the real sandbox.
const (
	guessEnv = `import random

class GuessNumber:
    def reset(self, seed):
        rng = random.Random(seed)
        self.target = rng.randint(1, 100)
        self.best = 100
        return "I picked a number from 1 to 100. Answer with <action>N</action>; after each guess I say higher or lower."

    def step(self, action):
        try:
            guess = int(action.strip())
        except ValueError:
            return "Not a number. Guess an integer from 1 to 100.", 0.0, False, False, {}
        if guess == self.target:
            return "Correct!", 1.0, True, False, {"success": True}
        dist = abs(guess - self.target)
        reward = 0.0
        if dist < self.best:
            reward, self.best = 0.01, dist
        side = "higher" if guess < self.target else "lower"
        return "%d is wrong: the number is %s." % (guess, side), reward, False, False, {"distance": dist}
`
	crashEnv = `class Crashes:
    def reset(self, seed):
        self.n = 0
        return "Answer with <action>N</action>."

    def step(self, action):
        self.n += 1
        if self.n == 2:
            return 1 / 0
        return "again", 0.0, False, False, {}
`
	slowEnv = `class Spins:
    def reset(self, seed):
        return "Answer with <action>N</action>."

    def step(self, action):
        while True:
            pass
`
	brokenEnv = "class Broken:\n    def reset(self, seed)\n        return 'x'\n"
	failEnv   = `class AgentFails:
    def reset(self, seed):
        return "AGENT-FAIL: answer with <action>N</action>."

    def step(self, action):
        return "ok", 0.0, False, False, {}
`
	ledgerEnv = `import json, random

class Ledger:
    def tools(self):
        account = {"type": "string", "description": "account name"}
        return [
            {"type": "function", "function": {"name": "get_balance", "description": "Read a balance",
             "parameters": {"type": "object", "properties": {"account": account}, "required": ["account"]}}},
            {"type": "function", "function": {"name": "deposit", "description": "Add money to an account",
             "parameters": {"type": "object", "properties": {"account": account, "amount": {"type": "integer"}},
                            "required": ["account", "amount"]}}},
        ]

    def reset(self, seed):
        rng = random.Random(seed)
        self.balances = {"alice": rng.randint(0, 50), "bob": rng.randint(0, 50)}
        self.target = rng.randint(60, 90)
        return "Instruction 1 of 1: bring alice's balance to exactly %d." % self.target

    def step(self, action):
        call = json.loads(action)
        name, args = call["name"], call["arguments"]
        account = args.get("account")
        if account not in self.balances:
            return "error: no such account", 0.0, False, False, {}
        if name == "get_balance":
            return json.dumps({"account": account, "balance": self.balances[account]}), 0.0, False, False, {}
        if name == "deposit":
            self.balances[account] += int(args.get("amount", 0))
            if self.balances["alice"] == self.target:
                return "Instruction complete.", 1.0, True, False, {"success": True}
            if self.balances["alice"] > self.target:
                return "alice is above the target: failed.", 0.0, True, False, {"success": False}
            return json.dumps({"account": account, "balance": self.balances[account]}), 0.0, False, False, {}
        return "error: unknown tool", 0.0, False, False, {}
`
)

var wrongRE = regexp.MustCompile(`(\d+) is wrong: the number is (higher|lower)`)

// agentScript plays the test envs: with the hint it bisects (or reads the balance first), without it it
// guesses from the request seed, so hinted episodes succeed more often. Some unhinted answers are
// unparsable on purpose.
func agentScript(req *llm.ChatRequestBody) llmtest.Reply {
	hinted := strings.Contains(req.Messages[0].Content, "<hint>")
	first := req.Messages[1].Content
	if strings.Contains(first, "AGENT-FAIL") {
		return llmtest.Reply{Status: 503}
	}
	if len(req.Tools) > 0 {
		return ledgerAgent(req, hinted)
	}
	turn := (len(req.Messages) - 2) / 2
	if !hinted {
		if turn == 0 && req.Seed%2 == 0 {
			return llmtest.Reply{Text: "I think the answer is 50."}
		}
		return llmtest.Reply{Text: fmt.Sprintf("<action>%d</action>", 1+(req.Seed>>uint(turn%8))%100)}
	}
	lo, hi := 1, 100
	for _, m := range req.Messages[2:] {
		if m.Role != "user" {
			continue
		}
		if g := wrongRE.FindStringSubmatch(m.Content); g != nil {
			n, _ := strconv.Atoi(g[1])
			if g[2] == "higher" {
				lo = max(lo, n+1)
			} else {
				hi = min(hi, n-1)
			}
		}
	}
	return llmtest.Reply{Text: fmt.Sprintf("Bisecting [%d, %d].\n<action>%d</action>", lo, hi, (lo+hi)/2)}
}

var targetRE = regexp.MustCompile(`exactly (\d+)`)

func ledgerAgent(req *llm.ChatRequestBody, hinted bool) llmtest.Reply {
	call := func(name, args string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("call_%d", len(req.Messages)), Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}}}
	}
	last := req.Messages[len(req.Messages)-1]
	if len(req.Messages) == 2 {
		if !hinted && req.Seed%3 == 0 {
			return call("deposit", `{"account": "alice", "amount": `) // invalid JSON on purpose
		}
		if hinted {
			return call("get_balance", `{"account": "alice"}`)
		}
		return call("deposit", fmt.Sprintf(`{"account": "alice", "amount": %d}`, 10+req.Seed%40))
	}
	target, _ := strconv.Atoi(targetRE.FindStringSubmatch(req.Messages[1].Content)[1])
	var state struct {
		Balance int `json:"balance"`
	}
	if last.Role == "tool" && json.Unmarshal([]byte(last.Content), &state) == nil && hinted {
		return call("deposit", fmt.Sprintf(`{"account": "alice", "amount": %d}`, target-state.Balance))
	}
	return call("get_balance", `{"account": "alice"}`)
}
