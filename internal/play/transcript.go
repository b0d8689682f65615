package play

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spadekit/spade/schemas"
)

// TranscriptLineBytes caps each line of a Transcript (longer texts are cut, marked with "…").
const TranscriptLineBytes = 2000

// Transcript renders an episode compactly, one line per item, newlines inside texts escaped as "\n":
//
//	obs: <observation shown before turn t>
//	act: <parsed action>            or   err: <parse error>
//	   → reward=<r> done=<bool>      (after an action the env stepped)
//	end: <ended_by> success=<bool> return=<R> turns=<n>[ error=<error>]
func Transcript(ep schemas.EpisodeRow, turns []schemas.TurnRow) string {
	var b strings.Builder
	for _, t := range turns {
		line(&b, "obs: ", t.Observation)
		if t.ParseError != "" {
			line(&b, "err: ", t.ParseError)
			continue
		}
		line(&b, "act: ", t.Action)
		if t.Truncated {
			fmt.Fprintf(&b, "   → reward=%g done=%t (the env truncated the episode)\n", t.Reward, t.Done)
		} else {
			fmt.Fprintf(&b, "   → reward=%g done=%t\n", t.Reward, t.Done)
		}
	}
	fmt.Fprintf(&b, "end: %s success=%t return=%g turns=%d", ep.EndedBy, ep.Success, ep.Return, len(turns))
	if ep.Error != "" {
		b.WriteString(" error=")
		b.WriteString(cut(strings.ReplaceAll(ep.Error, "\n", `\n`)))
	}
	return b.String()
}

func line(b *strings.Builder, prefix, text string) {
	b.WriteString(prefix)
	b.WriteString(cut(strings.ReplaceAll(text, "\n", `\n`)))
	b.WriteByte('\n')
}

// cut shortens s to at most TranscriptLineBytes bytes on a rune boundary.
func cut(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= TranscriptLineBytes {
		return s
	}
	n := TranscriptLineBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
