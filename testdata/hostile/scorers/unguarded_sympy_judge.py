"""Decides whether two math answers are equal with sympy, loaded into the sandbox as an env program.

Answers arrive normalised by Go (bench.NormalizeMath); this turns the LaTeX that remains (\\frac,
\\sqrt, \\pi, \\cdot, ^, braces) into sympy syntax, parses both sides and checks simplify(a - b) == 0,
element by element for tuples. sympy's parser evaluates text, which is why this runs in the sandbox.
"""
import re

import sympy
from sympy.parsing.sympy_parser import (convert_xor, implicit_multiplication_application, parse_expr,
                                        standard_transformations)

TRANSFORMS = standard_transformations + (implicit_multiplication_application, convert_xor)


def braced(s: str, i: int):
    """Returns (content, end) of the {...} group starting at s[i] == '{'."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return s[i + 1:j], j + 1
    raise ValueError("unbalanced braces")


def latex_to_sympy(s: str) -> str:
    """Rewrites the LaTeX of an answer into sympy's syntax."""
    out, i = [], 0
    while i < len(s):
        if s.startswith("\\frac", i):
            i += 5
            num, i = braced(s, i) if s[i] == "{" else (s[i], i + 1)
            den, i = braced(s, i) if s[i] == "{" else (s[i], i + 1)
            out.append("((%s)/(%s))" % (latex_to_sympy(num), latex_to_sympy(den)))
        elif s.startswith("\\sqrt", i):
            i += 5
            root = "2"
            if i < len(s) and s[i] == "[":
                j = s.index("]", i)
                root, i = s[i + 1:j], j + 1
            arg, i = braced(s, i) if s[i] == "{" else (s[i], i + 1)
            out.append("((%s)**(1/(%s)))" % (latex_to_sympy(arg), latex_to_sympy(root)))
        elif s[i] == "\\":
            m = re.match(r"\\([A-Za-z]+)", s[i:])
            name = m.group(1) if m else ""
            i += 1 + len(name)
            out.append({"pi": "pi", "cdot": "*", "times": "*", "infty": "oo", "div": "/", "ln": "log",
                        "log": "log", "sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp"}.get(name, name))
        elif s[i] == "{":
            out.append("(")
            i += 1
        elif s[i] == "}":
            out.append(")")
            i += 1
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def split_top(s: str) -> list:
    """Splits a tuple or list at top-level commas."""
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]":
        inner = s[1:-1]
    else:
        inner = s
    parts, depth, cur = [], 0, []
    for c in inner:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts if len(parts) > 1 else [s]


def equal(a: str, b: str) -> bool:
    ea = parse_expr(latex_to_sympy(a), transformations=TRANSFORMS, evaluate=True)
    eb = parse_expr(latex_to_sympy(b), transformations=TRANSFORMS, evaluate=True)
    if ea == eb:
        return True
    diff = sympy.simplify(ea - eb)
    if diff == 0:
        return True
    try:
        return abs(complex(sympy.N(diff, 30))) < 1e-12
    except (TypeError, ValueError):
        return False


class SympyJudge:
    """The sandbox's env class: reset and step are unused; equivalent is called through Eval."""

    def reset(self, seed):
        return ""

    def step(self, action):
        return "", 0.0, True, {}

    def equivalent(self, a: str, b: str) -> list:
        """Returns [equal, detail]."""
        pa, pb = split_top(a), split_top(b)
        if len(pa) != len(pb):
            return [False, "%d elements, want %d" % (len(pa), len(pb))]
        try:
            for x, y in zip(pa, pb):
                if not equal(x, y):
                    return [False, "not equivalent"]
        except Exception as e:  # noqa: BLE001 - unparsable answers are wrong answers
            return [False, "unparsable: %s" % str(e).splitlines()[0][:200] if str(e) else type(e).__name__]
        return [True, "equivalent"]
