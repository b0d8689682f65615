package rollout

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

// CutHistory returns the conversation to send when it must fit in budget tokens: the system prompt and
// the first observation (which states the task) are always kept, and whole (answer, observation) pairs
// are dropped oldest first until the estimate fits or only the newest pair remains. Pairs keep the roles
// alternating and keep every tool result next to its call. A budget ≤ 0 means no cut.
func CutHistory(messages []llm.Message, budget int) []llm.Message {
	if budget <= 0 || len(messages) <= 4 {
		return messages
	}
	total := 0
	for _, m := range messages {
		total += EstimateTokens(m)
	}
	if total <= budget {
		return messages
	}
	head, rest := messages[:2], messages[2:]
	for len(rest) > 2 && total > budget {
		total -= EstimateTokens(rest[0]) + EstimateTokens(rest[1])
		rest = rest[2:]
	}
	out := make([]llm.Message, 0, len(head)+len(rest))
	return append(append(out, head...), rest...)
}
