package corpus

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Excerpt cuts a document for a Designer prompt: first to at most maxWords words (sample.excerpt_words;
// the text up to the end of that word, whitespace kept), then to at most maxChars characters
// (sample.excerpt_chars, runes), at the last paragraph or sentence break in the final fifth when there
// is one, else at a space, else hard. A limit ≤ 0 does not cut.
func Excerpt(text string, maxChars, maxWords int) string {
	return cutChars(cutWords(text, maxWords), maxChars)
}

func cutWords(text string, maxWords int) string {
	if maxWords <= 0 {
		return text
	}
	words, inWord := 0, false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if !space && !inWord {
			if words == maxWords {
				return strings.TrimRightFunc(text[:i], unicode.IsSpace)
			}
			words++
		}
		inWord = !space
	}
	return text
}

func cutChars(text string, maxChars int) string {
	if maxChars <= 0 || utf8.RuneCountInString(text) <= maxChars {
		return text
	}
	cut := 0
	for i := range text {
		if maxChars == 0 {
			cut = i
			break
		}
		maxChars--
	}
	head := text[:cut]
	floor := len(head) * 4 / 5
	for _, sep := range []string{"\n\n", ". ", "\n", " "} {
		if i := strings.LastIndex(head, sep); i >= floor {
			return strings.TrimRight(head[:i+len(sep)], " \n")
		}
	}
	return head
}

// MarkedExcerpt cuts a document the way the authors' corpus loader does (sample.excerpt_cut marked): a
// document of more than maxWords words (runs of non-space) becomes its first maxWords words joined by
// single spaces, then a line "[Document truncated at ~N words]"; a shorter one, or maxWords ≤ 0, is kept
// as it is, whitespace and all. The character cut (maxChars, as in Excerpt) applies after.
func MarkedExcerpt(text string, maxChars, maxWords int) string {
	if maxWords > 0 {
		if words := strings.Fields(text); len(words) > maxWords {
			text = strings.Join(words[:maxWords], " ") + fmt.Sprintf("\n[Document truncated at ~%d words]", maxWords)
		}
	}
	return cutChars(text, maxChars)
}

// Cut is the excerpt of a document for a Designer prompt under the run's settings: MarkedExcerpt when
// marked (sample.excerpt_cut marked), else Excerpt.
func Cut(text string, maxChars, maxWords int, marked bool) string {
	if marked {
		return MarkedExcerpt(text, maxChars, maxWords)
	}
	return Excerpt(text, maxChars, maxWords)
}
