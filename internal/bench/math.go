package bench

import (
	"context"
	"math/big"
	"regexp"
	"strings"
)

// MathVerdict is the outcome of comparing a math answer with its reference.
type MathVerdict struct {
	// Correct is the verdict; Sure is false when plain normalisation could not decide and sympy should.
	Correct, Sure bool
	// Detail says how the verdict was reached.
	Detail string
}

// ExtractBoxed returns the content of the last \boxed{...} (or \fbox{...}) of text, braces balanced, and
// whether there was one. A reasoning model often boxes intermediate results: only the last counts.
func ExtractBoxed(text string) (string, bool) {
	best, markerLen := -1, 0
	for _, marker := range []string{`\boxed`, `\fbox`} {
		if i := strings.LastIndex(text, marker); i > best {
			best, markerLen = i, len(marker)
		}
	}
	if best < 0 {
		return "", false
	}
	rest := text[best+markerLen:]
	rest = strings.TrimLeft(rest, " ")
	if rest == "" {
		return "", false
	}
	if rest[0] != '{' { // \boxed 5
		f := strings.Fields(rest)
		return strings.TrimRight(f[0], "$.,"), true
	}
	depth := 0
	for i, c := range rest {
		switch c {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return strings.TrimSpace(rest[1:i]), true
			}
		}
	}
	return "", false
}

var (
	textWrapRE   = regexp.MustCompile(`\\(?:text|textbf|mathrm|mathbf|mbox|operatorname)\{([^{}]*)\}`)
	unitRE       = regexp.MustCompile(`^(.*?\d)\s*\\text\{\s*[a-zA-Z ]+\}$`)
	thousandsRE  = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)
	varEqualsRE  = regexp.MustCompile(`^[a-zA-Z](_\{?\w+\}?)?\s*=\s*`)
	fracArgsRE   = regexp.MustCompile(`^(-?)\\frac\{([^{}]+)\}\{([^{}]+)\}$`)
	fracShortRE  = regexp.MustCompile(`^(-?)\\frac(\d)(\d)$`)
	plainNumRE   = regexp.MustCompile(`^[-+]?[0-9./]+$`)
	spaceMacroRE = regexp.MustCompile(`\\[,;:! ]|~`)
)

// NormalizeMath puts an answer into a canonical text form: no math delimiters, spacing macros, \left and
// \right, units in \text{}, degree and percent signs, "x =" prefixes, thousands separators or final
// period; \dfrac and \tfrac as \frac; no spaces.
func NormalizeMath(s string) string {
	s = strings.TrimSpace(s)
	for _, d := range []string{"$", `\(`, `\)`, `\[`, `\]`, `\displaystyle`} {
		s = strings.ReplaceAll(s, d, "")
	}
	s = spaceMacroRE.ReplaceAllString(s, " ")
	s = strings.NewReplacer(`\left`, "", `\right`, "", `\dfrac`, `\frac`, `\tfrac`, `\frac`,
		`^{\circ}`, "", `^\circ`, "", "°", "", `\%`, "", "%", "", `\$`, "").Replace(s)
	if m := unitRE.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	s = textWrapRE.ReplaceAllString(s, "$1")
	s = strings.TrimSpace(s)
	s = varEqualsRE.ReplaceAllString(s, "")
	s = strings.TrimRight(s, ". ")
	s = strings.Join(strings.Fields(s), "")
	if thousandsRE.MatchString(s) {
		s = strings.ReplaceAll(s, ",", "")
	}
	return s
}

// ParseRational reads a normalised answer that is a rational number: an integer, a decimal, a/b,
// \frac{a}{b} or \frac ab (each with an optional sign); ok is false for anything else.
func ParseRational(s string) (*big.Rat, bool) {
	if m := fracArgsRE.FindStringSubmatch(s); m != nil {
		return ratio(m[1], m[2], m[3])
	}
	if m := fracShortRE.FindStringSubmatch(s); m != nil {
		return ratio(m[1], m[2], m[3])
	}
	s = strings.TrimPrefix(s, "+")
	if num, den, ok := strings.Cut(s, "/"); ok {
		sign := ""
		if strings.HasPrefix(num, "-") {
			sign, num = "-", num[1:]
		}
		return ratio(sign, num, den)
	}
	if !plainNumRE.MatchString(s) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

func ratio(sign, num, den string) (*big.Rat, bool) {
	n, ok1 := new(big.Rat).SetString(strings.TrimPrefix(num, "+"))
	d, ok2 := new(big.Rat).SetString(den)
	if !ok1 || !ok2 || d.Sign() == 0 || strings.ContainsAny(num, "/") || strings.ContainsAny(den, "/") {
		return nil, false
	}
	r := new(big.Rat).Quo(n, d)
	if sign == "-" {
		r.Neg(r)
	}
	return r, true
}

// CompareMath compares an extracted answer with the reference by plain normalisation: equal texts or
// equal rationals are sure; two plain numbers that differ are surely different; anything else (roots,
// π, expressions, intervals in different forms) is unsure, for sympy to decide.
func CompareMath(answer, reference string) MathVerdict {
	a, b := NormalizeMath(answer), NormalizeMath(reference)
	if a == "" {
		return MathVerdict{Sure: true, Detail: "empty answer"}
	}
	if a == b {
		return MathVerdict{Correct: true, Sure: true, Detail: "equal after normalisation"}
	}
	ra, okA := ParseRational(a)
	rb, okB := ParseRational(b)
	if okA && okB {
		if ra.Cmp(rb) == 0 {
			return MathVerdict{Correct: true, Sure: true, Detail: "equal as numbers"}
		}
		return MathVerdict{Sure: true, Detail: "different numbers"}
	}
	if strings.EqualFold(a, b) {
		return MathVerdict{Correct: true, Sure: true, Detail: "equal ignoring case"}
	}
	return MathVerdict{Detail: "undecided by normalisation"}
}

// Equivalence decides whether two math expressions are equal (SympyJudge in the sandbox).
type Equivalence interface {
	// Equivalent reports whether answer equals reference symbolically, with a one-line detail.
	Equivalent(ctx context.Context, answer, reference string) (bool, string, error)
}

// ScoreMath scores a math response: the last \boxed{} against the reference, by CompareMath and, when
// that is unsure and judge is not nil, by the judge. It returns the score, the extracted answer and the
// detail.
func ScoreMath(ctx context.Context, response, reference string, judge Equivalence) (float64, string, string, error) {
	ans, ok := ExtractBoxed(response)
	if !ok {
		return 0, "", "no \\boxed{} answer", nil
	}
	v := CompareMath(ans, reference)
	if !v.Sure {
		if judge == nil {
			return 0, ans, v.Detail + "; no sympy judge", nil
		}
		eq, detail, err := judge.Equivalent(ctx, NormalizeMath(ans), NormalizeMath(reference))
		if err != nil {
			return 0, ans, "", err
		}
		v = MathVerdict{Correct: eq, Sure: true, Detail: "sympy: " + detail}
	}
	if v.Correct {
		return 1, ans, v.Detail, nil
	}
	return 0, ans, v.Detail, nil
}
