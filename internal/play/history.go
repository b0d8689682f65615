package play

import "github.com/spadekit/spade/internal/llm"

// BytesPerToken is the estimate used to fit the history into the context: 4 bytes of UTF-8 per token,
// about right for English with Qwen3's tokenizer, and cheap enough to run on every turn.
const BytesPerToken = 4

// EstimateTokens estimates the prompt tokens of a message: its content and tool calls at BytesPerToken,
// plus 4 for the chat template's role markers.
func EstimateTokens(m llm.Message) int {
	n := len(m.Content)
	for _, tc := range m.ToolCalls {
		n += len(tc.Function.Name) + len(tc.Function.Arguments) + len(tc.ID)
	}
	return n/BytesPerToken + 4
}

// HistoryTokens estimates the prompt tokens of a whole conversation (EstimateTokens summed).
func HistoryTokens(messages []llm.Message) int {
	total := 0
	for _, m := range messages {
		total += EstimateTokens(m)
	}
	return total
}

// openingLen is the number of leading messages that state the task and are never cut: the system
// prompt, when there is one, and the first user message (the first observation).
func openingLen(messages []llm.Message) int {
	if len(messages) > 0 && messages[0].Role == "system" {
		return 2
	}
	return 1
}

// CutHistory returns the conversation to send when it must fit in budget tokens (rollout.context
// drop_oldest): the opening (the system prompt, if any, and the first observation, which states the
// task) is always kept, and whole (answer, observation) pairs are dropped oldest first until the
// estimate fits or only the newest pair remains. Pairs keep the roles alternating and keep every tool
// result next to its call. A budget ≤ 0 means no cut.
func CutHistory(messages []llm.Message, budget int) []llm.Message {
	head := openingLen(messages)
	if budget <= 0 || len(messages) <= head+2 {
		return messages
	}
	total := HistoryTokens(messages)
	if total <= budget {
		return messages
	}
	rest := messages[head:]
	for len(rest) > 2 && total > budget {
		total -= EstimateTokens(rest[0]) + EstimateTokens(rest[1])
		rest = rest[2:]
	}
	out := make([]llm.Message, 0, head+len(rest))
	return append(append(out, messages[:head]...), rest...)
}

// OverContext reports whether the whole conversation no longer fits in budget tokens (rollout.context
// truncate, where the episode then ends with ended_by max_turns: its turn budget is the context). A
// budget ≤ 0 means no limit.
func OverContext(messages []llm.Message, budget int) bool {
	return budget > 0 && HistoryTokens(messages) > budget
}
