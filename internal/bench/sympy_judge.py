"""Decides whether two math answers are equal with sympy, loaded into the sandbox as an env program.

Answers arrive normalised by Go (bench.NormalizeMath). The answer text is never evaluated: a parser
written for the answer syntax (numbers, fractions, \\frac, \\sqrt, powers, factorials, pi, e, infinity,
Greek letters, named functions, implicit products, tuples, intervals and sets) builds sympy objects from
its own grammar, and anything outside it is "unparsable". No text reaches eval, exec, sympify or
parse_expr. Both sides are compared by simplify(a - b) == 0 (or a numeric difference under 1e-12),
element by element for tuples and intervals, as a matching for sets.

The comparison runs in a child process that holds one descriptor, a pipe to its parent, and writes one
line there; the parent accepts only that line in the expected form and tags the reply with Go's nonce.
"""
import json
import os
import resource
import select
import time

import sympy

MAX_CHARS = 2000  # an answer longer than this is unparsable (a boxed answer is short)
MAX_DIGITS = 400  # the longest number literal
MAX_EXPONENT = 10000  # the largest integer exponent of a number and argument of a factorial
MAX_DEPTH = 60  # the deepest nesting of groups
MAX_BITS = 1 << 17  # the largest exact power, in bits of its numerator or denominator

FUNCTIONS = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "sec": sympy.sec, "csc": sympy.csc, "cot": sympy.cot,
    "arcsin": sympy.asin, "arccos": sympy.acos, "arctan": sympy.atan, "sinh": sympy.sinh, "cosh": sympy.cosh,
    "tanh": sympy.tanh, "exp": sympy.exp, "ln": sympy.log, "log": sympy.log, "sqrt": sympy.sqrt, "abs": sympy.Abs,
}
CONSTANTS = {"pi": sympy.pi, "infty": sympy.oo, "infinity": sympy.oo, "oo": sympy.oo}
GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota",
         "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega",
         "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega"}
OPERATORS = {"cdot": "*", "times": "*", "div": "/", "ast": "*"}
# Names a run of plain letters may contain, longest first (the rest are one-letter symbols: xy is x*y).
WORDS = sorted(list(FUNCTIONS) + ["pi", "oo"], key=len, reverse=True)


class Unparsable(ValueError):
    """The answer is outside the grammar."""


class Parser:
    """A recursive-descent parser of one normalised answer (no spaces) into a sympy expression.

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/" | implicit) unary)*
    unary   := ("+" | "-") unary | power
    power   := postfix ("^" exponent)?          exponent: a group, or a unary (2^-1, 2^10)
    postfix := atom "!"*
    atom    := number | symbol | constant | "(" expr ")" | "[" expr "]" | "{" expr "}" | "|" expr "|"
             | \\frac arg arg | \\sqrt ("[" expr "]")? arg | function arg
    arg     := "{" expr "}" | one digit or letter | (for functions) a postfix
    """

    def __init__(self, text: str):
        if len(text) > MAX_CHARS:
            raise Unparsable("longer than %d characters" % MAX_CHARS)
        self.s, self.i, self.depth = text, 0, 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def expect(self, c: str) -> None:
        if self.peek() != c:
            raise Unparsable("expected %r at %d" % (c, self.i))
        self.i += 1

    def command(self) -> str:
        """The name of the \\command at the cursor (not consumed), or "" for a backslash before a symbol."""
        if self.peek() != "\\":
            return ""
        j = self.i + 1
        while j < len(self.s) and self.s[j].isascii() and self.s[j].isalpha():
            j += 1
        return self.s[self.i + 1:j]

    def parse(self):
        e = self.expr()
        if self.i != len(self.s):
            raise Unparsable("unexpected %r at %d" % (self.s[self.i], self.i))
        return e

    def nest(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unparsable("nested deeper than %d" % MAX_DEPTH)

    def expr(self):
        self.nest()
        e = self.term()
        while self.peek() in ("+", "-") and self.peek():
            op = self.peek()
            self.i += 1
            t = self.term()
            e = e + t if op == "+" else e - t
        self.depth -= 1
        return e

    def starts_atom(self) -> bool:
        c = self.peek()
        if not c:
            return False
        if c.isdigit() or c == "." or c in "([{" or (c.isascii() and c.isalpha()):
            return True
        if c == "\\":
            name = self.command()
            return name not in OPERATORS and name != ""
        return False

    def term(self):
        e = self.unary()
        while True:
            c = self.peek()
            name = self.command()
            if c == "*" and self.peek(1) != "*":
                self.i += 1
                e = e * self.unary()
            elif c == "/" or name == "div":
                self.i += 1 if c == "/" else 4
                e = e / self.unary()
            elif name in ("cdot", "times", "ast"):
                self.i += 1 + len(name)
                e = e * self.unary()
            elif self.starts_atom():
                e = e * self.power()  # implicit product: 2x, 2\sqrt{3}, (x+1)(x-1); not of a sign
            else:
                return e

    def unary(self):
        c = self.peek()
        if c == "-":
            self.i += 1
            return -self.unary()
        if c == "+":
            self.i += 1
            return self.unary()
        return self.power()

    def power(self):
        base = self.postfix()
        if self.peek() == "^" or (self.peek() == "*" and self.peek(1) == "*"):
            self.i += 1 if self.peek() == "^" else 2
            if self.peek() == "{":
                self.i += 1
                exp = self.expr()
                self.expect("}")
            else:
                exp = self.unary()
            return bounded_pow(base, exp)
        return base

    def postfix(self):
        e = self.atom()
        while self.peek() == "!":
            self.i += 1
            if not (e.is_Integer and 0 <= int(e) <= MAX_EXPONENT):
                raise Unparsable("factorial of %s" % e)
            e = sympy.factorial(e)
        return e

    def group(self, close: str):
        self.i += 1
        e = self.expr()
        self.expect(close)
        return e

    def arg(self):
        """A command's argument: a braced group, else one character (\\frac12, \\sqrt2)."""
        c = self.peek()
        if c == "{":
            return self.group("}")
        if c.isdigit():
            self.i += 1
            return sympy.Integer(int(c))
        if c.isascii() and c.isalpha():
            self.i += 1
            return letter(c)
        if c == "\\":
            return self.atom()
        raise Unparsable("expected an argument at %d" % self.i)

    def atom(self):
        c = self.peek()
        if not c:
            raise Unparsable("the answer ends too soon")
        if c.isdigit() or c == ".":
            return self.number()
        if c == "(":
            return self.group(")")
        if c == "[":
            return self.group("]")
        if c == "{":
            return self.group("}")
        if c == "|":
            self.i += 1
            e = self.expr()
            self.expect("|")
            return sympy.Abs(e)
        if c == "\\":
            return self.latex()
        if c.isascii() and c.isalpha():
            return self.word()
        raise Unparsable("unexpected %r at %d" % (c, self.i))

    def number(self):
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        if j < len(self.s) and self.s[j] == "." and j + 1 < len(self.s) and self.s[j + 1].isdigit():
            j += 1
            while j < len(self.s) and self.s[j].isdigit():
                j += 1
        text = self.s[self.i:j]
        if text in ("", "."):
            raise Unparsable("a lone '.' at %d" % self.i)
        if len(text) > MAX_DIGITS:
            raise Unparsable("a number of more than %d digits" % MAX_DIGITS)
        self.i = j
        if "." in text:
            whole, frac = text.split(".")
            return sympy.Rational(int(whole or "0") * 10 ** len(frac) + int(frac), 10 ** len(frac))
        return sympy.Integer(int(text))

    def word(self):
        """A run of letters: a named function or constant, else one-letter symbols (implicit product)."""
        for w in WORDS:
            if self.s.startswith(w, self.i):
                self.i += len(w)
                if w in FUNCTIONS:
                    return self.apply(FUNCTIONS[w])
                return CONSTANTS[w]
        c = self.s[self.i]
        self.i += 1
        sym = letter(c)
        if self.peek() == "_":  # x_1, x_{12}, a_n
            self.i += 1
            if self.peek() == "{":
                j = self.s.find("}", self.i)
                sub = self.s[self.i + 1:j] if j > 0 else ""
                if not sub.isalnum():
                    raise Unparsable("subscript at %d" % self.i)
                self.i = j + 1
            elif self.peek().isalnum():
                sub = self.peek()
                self.i += 1
            else:
                raise Unparsable("subscript at %d" % self.i)
            sym = sympy.Symbol("%s_%s" % (c, sub))
        return sym

    def apply(self, fn):
        """A function's argument: a group, else the postfix that follows (\\sin x, \\ln 2)."""
        if self.peek() == "^" and fn in (sympy.sin, sympy.cos, sympy.tan, sympy.sec, sympy.csc, sympy.cot):
            self.i += 1  # \sin^2 x = (\sin x)^2
            exp = self.arg()
            return bounded_pow(self.apply(fn), exp)
        if fn is sympy.log and self.peek() == "_":
            self.i += 1
            base = self.arg()
            return sympy.log(self.apply(lambda x: x), base)
        if self.peek() == "(":
            return fn(self.group(")"))
        if self.peek() == "{":
            return fn(self.group("}"))
        return fn(self.postfix())

    def latex(self):
        name = self.command()
        if not name:
            nxt = self.peek(1)
            if nxt in "{}":  # \{ and \} are set braces, handled by split_top; here they group
                raise Unparsable("set braces inside an expression")
            raise Unparsable("unknown command at %d" % self.i)
        self.i += 1 + len(name)
        if name == "frac":
            num = self.arg()
            den = self.arg()
            return num / den
        if name == "sqrt":
            if self.peek() == "[":
                root = self.group("]")
                return bounded_pow(self.arg(), 1 / root)
            return sympy.sqrt(self.arg())
        if name in FUNCTIONS:
            return self.apply(FUNCTIONS[name])
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in GREEK:
            return sympy.Symbol(name)
        raise Unparsable("unknown command \\%s" % name)


def letter(c: str):
    """A one-letter name: e is Euler's number, i the imaginary unit, any other letter a symbol."""
    if c == "e":
        return sympy.E
    if c == "i":
        return sympy.I
    return sympy.Symbol(c)


def bounded_pow(base, exp):
    """base**exp, refused when it would build a huge exact number (9^9^9, (10^999)^999)."""
    if exp.is_Integer and base.is_Rational and base not in (0, 1, -1):
        bits = max(int(base.p).bit_length(), int(base.q).bit_length()) * abs(int(exp))
        if abs(int(exp)) > MAX_EXPONENT or bits > MAX_BITS:
            raise Unparsable("a power too large to build exactly")
    return base ** exp


def parse(text: str):
    """The sympy expression of one normalised answer; raises Unparsable outside the grammar."""
    if not text:
        raise Unparsable("empty")
    return Parser(text).parse()


def split_top(s: str):
    """Splits a tuple, interval or set at its top-level commas: (brackets, parts). brackets is "" for a
    bare list or a single expression, else its opening and closing characters ("()", "[)", "{}")."""
    brackets, inner = "", s
    if s.startswith("\\{") and s.endswith("\\}"):
        brackets, inner = "{}", s[2:-2]
    elif len(s) >= 2 and s[0] in "([" and s[-1] in ")]":
        brackets, inner = s[0] + s[-1], s[1:-1]
    parts, depth, cur = [], 0, []
    for c in inner:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:  # "(a)(b)": the outer brackets were not one pair
                return "", [s]
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    if len(parts) == 1 and brackets != "{}":
        return "", [s]
    return brackets, parts


def equal(ea, eb) -> bool:
    if ea == eb:
        return True
    diff = sympy.simplify(ea - eb)
    if diff == 0:
        return True
    try:
        return abs(complex(sympy.N(diff, 30))) < 1e-12
    except (TypeError, ValueError):
        return False


def verdict(a: str, b: str) -> list:
    """[equal, detail] for two normalised answers."""
    ka, pa = split_top(a)
    kb, pb = split_top(b)
    if len(pa) != len(pb):
        return [False, "%d elements, want %d" % (len(pa), len(pb))]
    if ka and kb and ka != kb and "{}" in (ka, kb):
        return [False, "a set against a tuple"]
    if ka and kb and ka != kb:
        return [False, "brackets %s, want %s" % (ka, kb)]
    try:
        xa, xb = [parse(x) for x in pa], [parse(y) for y in pb]
    except Unparsable as e:
        return [False, "unparsable: %s" % str(e)[:200]]
    except (ValueError, TypeError, ArithmeticError) as e:
        return [False, "unparsable: %s" % type(e).__name__]
    if "{}" in (ka, kb):  # a set: every element matched once
        left = list(xb)
        for x in xa:
            hit = next((k for k, y in enumerate(left) if equal(x, y)), None)
            if hit is None:
                return [False, "not equivalent"]
            left.pop(hit)
        return [True, "equivalent"]
    for x, y in zip(xa, xb):
        if not equal(x, y):
            return [False, "not equivalent"]
    return [True, "equivalent"]


def close_all_but(keep: int) -> None:
    """Close every descriptor but keep: those /proc/self/fd lists (one listing rather than a close per
    possible number), or every number below the hard RLIMIT_NOFILE (at least 1024) where /proc cannot be
    read (the landlock layer)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = range(max(1024, min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1 << 16)))
    for fd in fds:
        if fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def judged(a: str, b: str, timeout: float) -> list:
    """verdict(a, b) computed in a child process that holds only the write end of a pipe: one JSON
    line [bool, str] is the only verdict accepted from it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            close_all_but(w)
            try:
                out = verdict(a, b)
            except RecursionError:
                out = [False, "unparsable: too deeply nested"]
            except Exception as e:  # noqa: BLE001 - sympy on odd input
                out = [False, "sympy failed: %s" % type(e).__name__]
            data = json.dumps([bool(out[0]), str(out[1])[:300]]).encode() + b"\n"
            while data:
                data = data[os.write(w, data):]
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    os.close(w)
    chunks, size, deadline = [], 0, time.monotonic() + timeout
    late = False
    try:
        while size <= 4096:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                late = True
                break
            part = os.read(r, 4096)
            if not part:
                break
            chunks.append(part)
            size += len(part)
    finally:
        os.close(r)
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        os.waitpid(pid, 0)
    if late:
        return [False, "the comparison took longer than %gs" % timeout]
    line = b"".join(chunks)
    try:
        if not line.endswith(b"\n") or line.count(b"\n") != 1:
            raise ValueError
        out = json.loads(line)
        if not (isinstance(out, list) and len(out) == 2 and type(out[0]) is bool and type(out[1]) is str):
            raise ValueError
    except ValueError:
        return [False, "the comparison gave no verdict"]
    return out


class SympyJudge:
    """The sandbox's env class: reset and step are unused; equivalent is called through Eval."""

    def reset(self, seed):
        return ""

    def step(self, action):
        return "", 0.0, True, {}

    def equivalent(self, a: str, b: str, nonce: str, timeout: float) -> dict:
        """{"nonce": nonce, "equal": bool, "detail": str} for answers a and b."""
        eq, detail = judged(str(a), str(b), float(timeout))
        return {"nonce": str(nonce), "equal": eq, "detail": detail}
