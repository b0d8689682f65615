package llm

import (
	"errors"
	"strings"
)

// ErrThinkUnclosed is StripThink's error for an answer whose <think> block never ends (the model was cut
// off while reasoning): the answer is a failed one, with nothing to parse.
var ErrThinkUnclosed = errors.New("the think block never closed (the answer was cut off while thinking)")

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// StripThink returns the answer part of a completion, the text a parser, an env or a stored hint may see:
//   - an answer that reaches </think> before any <think> (Qwen3 with enable_thinking: the chat template
//     opens the block in the prompt) loses everything up to and including that first </think>;
//   - every complete <think>…</think> block is then removed (the shortest match, left to right);
//   - a <think> left without its </think> is ErrThinkUnclosed, with an empty answer.
//
// Text without think tags is returned unchanged. The tags are matched exactly (case-sensitive), as the
// tokenizer matches its special tokens.
func StripThink(text string) (string, error) {
	if end, open := strings.Index(text, thinkClose), strings.Index(text, thinkOpen); end >= 0 && (open < 0 || end < open) {
		text = text[end+len(thinkClose):]
	}
	var b strings.Builder
	for {
		open := strings.Index(text, thinkOpen)
		if open < 0 {
			break
		}
		end := strings.Index(text[open+len(thinkOpen):], thinkClose)
		if end < 0 {
			return "", ErrThinkUnclosed
		}
		b.WriteString(text[:open])
		text = text[open+len(thinkOpen)+end+len(thinkClose):]
	}
	if b.Len() == 0 {
		return text, nil
	}
	b.WriteString(text)
	return b.String(), nil
}
