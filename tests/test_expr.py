"""The restricted expression grammar of diagram files (loopint/spec/expr.py, DESIGN 4.2).

What is proven here: the grammar builds the sympy expression a physicist means (precedence,
exact decimals, sqrt), accepts only declared names and the one function sqrt, never executes
anything, and refuses hostile input (huge powers, long or deeply nested text, expressions
whose expansion would explode) in well under a second.  References are exact sympy
expressions built by hand.
"""

from __future__ import annotations

import time

import pytest
import sympy

from loopint.spec.expr import (MAX_DEPTH, MAX_LENGTH, ExpressionError, is_identifier,
                               parse_expression)

S = {n: sympy.Symbol(n, real=True) for n in ("s", "t", "m", "mt", "x1", "x2", "x3")}
s, t, m, mt, x1, x2, x3 = (S[n] for n in ("s", "t", "m", "mt", "x1", "x2", "x3"))


def parse(text):
    return parse_expression(text, S)


@pytest.mark.parametrize("text, expected", [
    ("s/2", s / 2),
    ("(s - 2*mt**2)/2", (s - 2 * mt**2) / 2),
    ("-x1**2", -(x1**2)),                       # unary minus binds looser than **
    ("2**3**2", sympy.Integer(512)),            # ** is right-associative: 2**(3**2)
    ("2**-1", sympy.Rational(1, 2)),
    ("--s", s),
    ("+s - -t", s + t),
    ("0.1", sympy.Rational(1, 10)),             # decimals are exact
    ("1e-3*s", s / 1000),
    ("2.5E2", sympy.Integer(250)),
    (".5", sympy.Rational(1, 2)),
    ("sqrt(s)", sympy.sqrt(s)),
    ("sqrt(4)", sympy.Integer(2)),
    ("s*t/m", s * t / m),
    ("s/t/m", s / (t * m)),                     # left-associative division
    ("(x1+x2)*(x1+x3) - x1**2", (x1 + x2) * (x1 + x3) - x1**2),
    ("  s\t+\n t ", s + t),                     # whitespace of any kind
])
def test_parses_what_a_physicist_means(text, expected):
    """Reference: the sympy expression written by hand; compared exactly (expand(a - b) == 0)."""
    assert sympy.expand(parse(text) - expected) == 0


def test_numbers_pass_through():
    assert parse_expression(3, {}) == 3
    assert parse_expression(0.25, {}) == sympy.Rational(1, 4)


def test_iterable_of_names_declares_real_symbols():
    e = parse_expression("a*b", ["a", "b"])
    assert {str(v) for v in e.free_symbols} == {"a", "b"}
    assert all(v.is_real for v in e.free_symbols)


@pytest.mark.parametrize("text, fragment", [
    ("u/2", "unknown symbol 'u'"),
    ("__import__('os')", "unexpected character"),
    ("__import__", "unknown symbol"),
    ("s.real", "unexpected character '.'"),
    ("lambda: 1", "unexpected character ':'"),
    ("lambda x: x", "unexpected character ':'"),
    ("exp(s)", "function calls are not allowed"),
    ("eval(1)", "function calls are not allowed"),
    ("s(1)", "function calls are not allowed"),
    ("sqrt", "'sqrt' must be called"),
    ("sqrt s", "'sqrt' must be called"),
    ("s^2", "use '**'"),
    ("s**t", "exponents must be numbers"),
    ("s**sqrt(2)", "exponents must be numbers"),
    ("s/0", "division by zero"),
    ("0**-1", "zero raised to a non-positive power"),
    ("s +", "unexpected"),
    ("(s", "expected ')'"),
    ("s)", "unexpected ')'"),
    ("", "empty expression"),
    ("   ", "empty expression"),
    ("s; t", "unexpected character ';'"),
    ("[s]", "unexpected character '['"),
    ("s # comment", "unexpected character '#'"),
    ("1_000", "unexpected '_000'"),             # not Python's digit separator
    ("s/\u0662", "unexpected character '\u0662'"),   # an Arabic-Indic 2 is not the number 2
    ("s\u00a0+ t", "unexpected character '\\xa0' at position 1"),   # nor a no-break space
    ("s * 2\u00a0", "unexpected character '\\xa0' at position 5"),   # a space
])
def test_refuses_code_and_bad_syntax(text, fragment):
    with pytest.raises(ExpressionError) as e:
        parse(text)
    assert fragment in str(e.value)


@pytest.mark.parametrize("value", [None, True, [1], {"a": 1}, float("nan"), float("inf")])
def test_refuses_non_expressions(value):
    with pytest.raises(ExpressionError):
        parse_expression(value, S)


def _hostile():
    return {
        "tower 9**9**9": "9**9**9",
        "huge literal power": "10**400",
        "power of a power": "((s+t)**64)**64",     # sympy folds it into (s+t)**4096
        "product of powers": "(s+t)**64*(s+t)**64",
        "multinomial blow-up": "(s+t+m+mt+x1+x2+x3)**12",
        "product of sums": "*".join(f"({a}+{b})" for a in "s t m".split() for b in "x1 x2 x3".split())
                           + "*(s+t+m)*(x1+x2+x3)*(mt+s+t)",
        "100 kB": "+".join(["s"] * 50_000),
        "deep parentheses": "(" * 10_000 + "s" + ")" * 10_000,
        "deep unary minus": "-" * 10_000 + "s",
        "deep sqrt": "sqrt(" * 200 + "s" + ")" * 200,
        "deep power chain": "**".join(["1"] * 5000),
        "long integer": "9" * 1000,
        "long decimal": "0." + "1" * 1000,
    }


@pytest.mark.parametrize("name", list(_hostile()))
def test_hostile_input_is_refused_quickly(name):
    """Each is refused with ExpressionError (never RecursionError or a hang) in < 2 s."""
    text = _hostile()[name]
    t0 = time.perf_counter()
    with pytest.raises(ExpressionError):
        parse(text)
    assert time.perf_counter() - t0 < 2.0


def test_limits_are_the_documented_ones():
    # a parenthesis costs two levels (the group and the expression inside it)
    parse("(" * (MAX_DEPTH // 2 - 1) + "s" + ")" * (MAX_DEPTH // 2 - 1))   # just inside
    with pytest.raises(ExpressionError, match="nested deeper"):
        parse("(" * (MAX_DEPTH // 2 + 1) + "s" + ")" * (MAX_DEPTH // 2 + 1))
    parse("+".join(["s"] * ((MAX_LENGTH - 1) // 2)))            # just inside the length limit
    assert parse("(s+t)**64").is_Pow                               # largest allowed exponent


def test_legitimate_large_polynomial_is_accepted():
    """The seed's Table 5.1 F (written as cc*(sum x) - ...) stays far below the size limits."""
    xs = [f"x{i}" for i in range(1, 8)]
    cc = "((x1+x2+x3+x4+x5)*(x1+x2+x3+x6+x7) - (x1+x2+x3)**2)"
    e = parse_expression(f"{cc}*(x1+x2+x3+x4+x5+x6+x7) - x1*x2*x4", xs)
    assert sympy.Poly(sympy.expand(e), *[sympy.Symbol(x, real=True) for x in xs]).total_degree() == 3


@pytest.mark.parametrize("name, ok", [("s", True), ("p1", True), ("m_t2", True), ("sqrt", False),
                                      ("__class__", False), ("1p", False), ("p-1", False),
                                      ("", False), (3, False)])
def test_is_identifier(name, ok):
    assert is_identifier(name) is ok
