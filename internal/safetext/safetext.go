// Package safetext makes text that generated programs wrote (observations, actions, tool results,
// hints, their output) safe to show a person: nothing in it acts on the terminal or reorders what is
// shown around it; what would is shown as a visible escape instead.
package safetext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Terminal returns s with every character a terminal or a bidirectional renderer would act on written
// as a visible escape: the C0 controls other than tab and newline (ESC starts every terminal control
// sequence; a carriage return overwrites the line) as \xNN, DEL, the C1 controls U+0080–U+009F (8-bit
// CSI and OSC) and the bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069, which
// reorder what follows them) as \uNNNN, and invalid UTF-8 as \xNN. A backslash stays a backslash, so an
// escape reads the same as the text "\x1b" would; text with none of these is returned as is.
func Terminal(s string) string {
	return escape(s, false)
}

// Cell is Terminal for a one-line table cell: newline and tab are escaped too (\n, \t).
func Cell(s string) string {
	return escape(s, true)
}

func escape(s string, oneLine bool) string {
	if clean(s, oneLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && oneLine:
			b.WriteString(`\n`)
		case r == '\t' && oneLine:
			b.WriteString(`\t`)
		case acts(r, oneLine):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// acts reports whether r is a character Terminal escapes (newline and tab only in a one-line cell).
func acts(r rune, oneLine bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return oneLine
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// clean reports whether s has nothing to escape (the common case, checked without allocating).
func clean(s string, oneLine bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && (oneLine || (c != '\n' && c != '\t')) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || acts(r, oneLine) {
			return false
		}
		i += size
	}
	return true
}
