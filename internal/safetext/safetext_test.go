package safetext

import "testing"

// Every kind of character that acts on a terminal or reorders text is shown escaped, and ordinary text,
// newlines and tabs (outside a cell) and non-ASCII letters pass as they are.
func TestTerminalAndCell(t *testing.T) {
	for _, c := range []struct{ in, term, cell string }{
		{"plain text, ünïcödé 漢字", "plain text, ünïcödé 漢字", "plain text, ünïcödé 漢字"},
		{"line one\nline\ttwo", "line one\nline\ttwo", `line one\nline\ttwo`},
		{"\x1b[2J\x1b]0;pwned\x07red", `\x1b[2J\x1b]0;pwned\x07red`, `\x1b[2J\x1b]0;pwned\x07red`},
		{"over\rwrite", `over\x0dwrite`, `over\x0dwrite`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`, `c1 \u009b31m csi`},
		{"bidi \u202eevil\u202c and \u2066iso\u2069", `bidi \u202eevil\u202c and \u2066iso\u2069`, `bidi \u202eevil\u202c and \u2066iso\u2069`},
		{"bad \xff utf8 \x7f", `bad \xff utf8 \x7f`, `bad \xff utf8 \x7f`},
	} {
		if got := Terminal(c.in); got != c.term {
			t.Errorf("Terminal(%q) = %q, want %q", c.in, got, c.term)
		}
		if got := Cell(c.in); got != c.cell {
			t.Errorf("Cell(%q) = %q, want %q", c.in, got, c.cell)
		}
	}
}
