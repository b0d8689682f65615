package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
)

// ShuffleSeed is the seed that orders a choice item's options for one sample: derived from the run seed,
// the benchmark, the item and the sample, so a re-run (or a replay) shows the same order, and each sample
// a different one.
func ShuffleSeed(runSeed int64, bench, itemID string, sample int) int64 {
	return int64(hashString(fmt.Sprintf("%d\x00%s\x00%s\x00%d", runSeed, bench, itemID, sample)) >> 1)
}

// ShuffleOptions returns the options in the order seed gives (a Fisher-Yates shuffle with PCG).
func ShuffleOptions(options []string, seed int64) []string {
	out := append([]string(nil), options...)
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed0b7))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// ParseOptions reads bench_items.options.
func ParseOptions(text string) ([]string, error) {
	var options []string
	if err := json.Unmarshal([]byte(text), &options); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	return options, nil
}

var (
	answerLetterRE = regexp.MustCompile(`(?i)answer\s*(?:is|:)?\s*[:\s]*\(?\**\s*([A-Z])\s*\**\)?(?:[^A-Za-z]|$)`)
	lastParenRE    = regexp.MustCompile(`\(([A-Z])\)`)
)

// ExtractChoice returns the option letter a response chose: the last \boxed{X}, else the last
// "Answer: X" (or "the answer is (X)"), else the last "(X)"; "" when none names a letter below n.
func ExtractChoice(response string, n int) string {
	valid := func(s string) string {
		s = strings.Trim(strings.TrimSpace(s), "()*. ")
		s = strings.TrimPrefix(s, `\text{`)
		s = strings.TrimSuffix(s, "}")
		if len(s) == 1 && s[0] >= 'A' && int(s[0]-'A') < n {
			return s
		}
		return ""
	}
	if b, ok := ExtractBoxed(response); ok {
		if l := valid(b); l != "" {
			return l
		}
	}
	if m := answerLetterRE.FindAllStringSubmatch(response, -1); m != nil {
		if l := valid(m[len(m)-1][1]); l != "" {
			return l
		}
	}
	if m := lastParenRE.FindAllStringSubmatch(response, -1); m != nil {
		return valid(m[len(m)-1][1])
	}
	return ""
}

// ScoreChoice scores a response to options shown in the given order: 1 when the chosen letter names the
// correct option's text.
func ScoreChoice(response string, shown []string, correct string) (float64, string, string) {
	letter := ExtractChoice(response, len(shown))
	if letter == "" {
		return 0, "", "no option letter"
	}
	chosen := shown[letter[0]-'A']
	if chosen == correct {
		return 1, letter, "correct option"
	}
	return 0, letter, fmt.Sprintf("chose %s, the correct option was %c", letter, 'A'+indexOf(shown, correct))
}
