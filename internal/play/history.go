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

// MinAnswerTokens is the least room an answer needs: a play whose prompt leaves no more than this of
// rollout.context_tokens ends there (the authors' min_generation_tokens, 64).
const MinAnswerTokens = 64

// AnswerBudget returns the max_tokens of the next answer when the prompt holds used of contextTokens
// (rollout.context truncate): min(maxTokens, contextTokens − used − MinAnswerTokens), so an answer
// always fits what is left, and ok false when no more than MinAnswerTokens are left (the play ends).
// contextTokens ≤ 0 means no limit: maxTokens, true.
func AnswerBudget(used, contextTokens, maxTokens int) (answer int, ok bool) {
	if contextTokens <= 0 {
		return maxTokens, true
	}
	left := contextTokens - used
	if left <= MinAnswerTokens {
		return 0, false
	}
	return min(maxTokens, left-MinAnswerTokens), true
}

// PromptCount counts a growing conversation in real tokens: the server's usage for the last answer
// (its prompt_tokens and completion_tokens cover the messages sent and the answer), then the estimate
// (EstimateTokens) of what was added since. Before the first answer, or from a server that reports no
// usage, the whole conversation is estimated. The zero value is ready.
type PromptCount struct {
	tokens, upTo int
}

// Answered records a completion of a request of sent messages: the first sent+1 messages of the
// conversation (the request and the answer) are comp's usage tokens.
func (c *PromptCount) Answered(comp *llm.Completion, sent int) {
	if comp.PromptTokens > 0 {
		c.tokens, c.upTo = int(comp.PromptTokens+comp.CompletionTokens), sent+1
		return
	}
	c.tokens, c.upTo = 0, 0
}

// Tokens returns the conversation's prompt tokens: the counted part as the server counted it, the
// rest estimated.
func (c *PromptCount) Tokens(messages []llm.Message) int {
	if c.upTo == 0 || c.upTo > len(messages) {
		return HistoryTokens(messages)
	}
	return c.tokens + HistoryTokens(messages[c.upTo:])
}
