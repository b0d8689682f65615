package play

import "testing"

// TestBoxedStepAction pins what a games env's step receives under rollout.action_passing boxed: the
// first box whose content holds no brace, else the last complete box (braces nested, up to two outer
// pairs unwrapped), re-wrapped as \boxed{…}; the answer itself, trimmed, when there is no box or the
// box is empty. Each expected string was worked out by hand from those rules.
func TestBoxedStepAction(t *testing.T) {
	cases := []struct{ answer, want string }{
		{`I move \boxed{left}`, `\boxed{left}`},
		{`\boxed{1} then \boxed{2}`, `\boxed{1}`},                                  // the first plain box, not the last
		{`answer: \boxed{\frac{1}{2}}`, `\boxed{\frac{1}{2}}`},                     // nested braces: the balanced box
		{`\boxed{{A}}`, `\boxed{A}`},                                               // one extra pair unwrapped
		{`\boxed{{{B}}}`, `\boxed{B}`},                                             // two extra pairs unwrapped
		{`first \boxed{\text{x}} last \boxed{y}`, `\boxed{y}`},                     // a plain box anywhere wins
		{`nested \boxed{a{b}c} end`, `\boxed{a{b}c}`},                              // braces kept inside
		{"no box here  ", "no box here"},                                           // no box: the answer, trimmed
		{`\boxed{}`, `\boxed{}`},                                                   // an empty box is no move: the answer
		{`\boxed{   }`, `\boxed{   }`},                                             // blank content likewise
		{`\boxed{unclosed`, `\boxed{unclosed`},                                     // never closed: the answer
		{`\boxed {spaced}`, `\boxed{spaced}`},                                      // a space before the brace
		{`\boxed{ guess 42 }`, `\boxed{guess 42}`},                                 // content trimmed
		{`\boxed{{a}{b}}`, `\boxed{a}{b}`},                                         // outer braces stripped as characters
		{"", ""},                                                                   // an empty answer steps with ""
		{"\\boxed{line1\nline2}", "\\boxed{line1\nline2}"},                         // content spans lines
		{`\boxedx{5}`, `\boxed{5}`},                                                // the first brace after the last \boxed
		{"<think>\\boxed{draft}</think> final \\boxed{go north}", `\boxed{draft}`}, // raw text: the first plain box
	}
	for _, c := range cases {
		if got := BoxedStepAction(c.answer); got != c.want {
			t.Errorf("BoxedStepAction(%q) = %q, want %q", c.answer, got, c.want)
		}
	}
}

// TestVisibleAnswer checks that a move is read after the last </think> only: a draft box inside the
// thinking is not the move.
func TestVisibleAnswer(t *testing.T) {
	answer := "<think>maybe \\boxed{draft}</think> final \\boxed{go north}"
	if got := BoxedStepAction(VisibleAnswer(answer)); got != `\boxed{go north}` {
		t.Errorf("move after the think block = %q, want \\boxed{go north}", got)
	}
	if got := VisibleAnswer("<think>never closed \\boxed{x}"); got != "<think>never closed \\boxed{x}" {
		t.Errorf("an unclosed think keeps the whole answer, got %q", got)
	}
}
