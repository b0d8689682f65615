package play

import (
	"regexp"
	"strings"
)

// markerBreak is what Neutralize inserts after a control marker's opening '<': U+200B ZERO WIDTH SPACE,
// invisible when the text is read, and no tokenizer's special token contains it.
const markerBreak = "\u200b"

// markerRE matches the control markers of the chat templates spade serves: any <|name|> (ChatML's
// <|im_start|> and <|im_end|>, <|endoftext|>, Qwen's <|fim_*|> and <|vision_*|>, Llama's <|eot_id|>, …)
// and Qwen3's tag tokens <think>, </think>, <tool_call>, </tool_call>, <tool_response>, </tool_response>.
var markerRE = regexp.MustCompile(`<\|[^|<>\s]{1,64}\|>|</?(?:think|tool_call|tool_response)>`)

// Neutralize returns text with every control marker of the template spelled in it broken, and how many
// it broke. A marker is a "<|name|>" (name: 1 to 64 characters, none of them '|', '<', '>' or white
// space) or one of the exact, case-sensitive tags <think>, </think>, <tool_call>, </tool_call>,
// <tool_response> and </tool_response>; each is rewritten as '<', U+200B ZERO WIDTH SPACE, and the rest
// of the marker ("<|im_end|>" becomes "<\u200b|im_end|>"). The text reads the same, but no tokenizer
// matches it as the special token, and a chat template's parser no longer sees a turn boundary, a tool
// call or a think block in it. Every other byte is unchanged; text without a marker is returned as is
// (count 0), so an env that never spells one sees its observations unchanged.
//
// The Agent's episode applies it to everything the env and the Designer put into the conversation
// before it is rendered or tokenized, in every rollout.token_io mode: the first observation, the hint,
// and every later observation or tool result (episodes.neutralized_markers counts them).
func Neutralize(text string) (string, int) {
	if !strings.Contains(text, "<") {
		return text, 0
	}
	n := 0
	out := markerRE.ReplaceAllStringFunc(text, func(m string) string {
		n++
		return "<" + markerBreak + m[1:]
	})
	return out, n
}
