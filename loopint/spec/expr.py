"""A restricted grammar for the expressions in diagram files.

User text never reaches ``eval`` or ``sympy.sympify``.  This module tokenizes and parses with
a small recursive-descent parser and builds sympy objects itself:

    expr   := term (("+" | "-") term)*
    term   := unary (("*" | "/") unary)*
    unary  := ("+" | "-") unary | power
    power  := atom ("**" unary)?            (right-associative, binds tighter than unary minus
                                             on its left: -x**2 == -(x**2))
    atom   := NUMBER | NAME | "sqrt" "(" expr ")" | "(" expr ")"

Names must be declared by the caller (kinematic symbols, momenta, Feynman parameters); the
only function is ``sqrt``.  Limits keep hostile input cheap: at most ``MAX_LENGTH`` characters,
``MAX_DEPTH`` nested levels (a parenthesis counts two), exponents that are rational numbers of
modest size (so ``9**9**9`` is refused before anything is computed), and results of total
degree at most ``MAX_DEGREE`` with at most ``MAX_EXPANDED_TERMS`` terms after expansion (both
bounded before anything is expanded, so ``((a+b)**64)**64``, which sympy folds into
``(a+b)**4096``, or a product of many sums cannot make a later ``sympy.expand`` run for
minutes).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping

import sympy

MAX_LENGTH = 20_000
MAX_DEPTH = 64
MAX_EXPONENT = 64          # |integer exponent| allowed
MAX_CONSTANT_DIGITS = 400  # digits of an exact constant built from literal powers
MAX_EXPANDED_TERMS = 5_000  # bound on the number of terms of sympy.expand(result)
MAX_DEGREE = 64            # bound on the total degree of the result in its symbols

# ASCII only: digits of other scripts (\d matches them) are refused, not read as numbers
_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op>\*\*|[-+*/()^]))", re.ASCII)


class ExpressionError(ValueError):
    """An expression that the grammar refuses; the message says where and why."""


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    toks, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            rest = text[pos:].lstrip(" \t\n\r\f\v")
            if not rest:
                break
            bad = rest[0]
            where = len(text) - len(rest)
            raise ExpressionError(f"unexpected character {bad!r} at position {where}")
        kind = m.lastgroup
        toks.append(_Tok(kind, m.group(kind), m.start(kind)))
        pos = m.end()
    toks.append(_Tok("end", "", len(text)))
    return toks


class _Parser:
    def __init__(self, text: str, symbols: Mapping[str, sympy.Symbol]):
        self.toks = _tokenize(text)
        self.i = 0
        self.symbols = symbols
        self.depth = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, text: str) -> None:
        t = self.take()
        if t.text != text:
            raise ExpressionError(f"expected {text!r} at position {t.pos}, found {t.text or 'end'!r}")

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"expression nested deeper than {MAX_DEPTH} levels")

    def parse(self):
        e = self.expr()
        t = self.peek()
        if t.kind != "end":
            raise ExpressionError(f"unexpected {t.text!r} at position {t.pos}")
        return e

    def expr(self):
        self.enter()
        terms = [self.term()]
        while self.peek().text in ("+", "-"):
            op = self.take().text
            r = self.term()
            terms.append(r if op == "+" else -r)
        self.depth -= 1
        return sympy.Add(*terms)  # one flatten instead of one per '+' (long inputs stay fast)

    def term(self):
        e = self.unary()
        while self.peek().text in ("*", "/"):
            op = self.take().text
            r = self.unary()
            if op == "*":
                e = e * r
            else:
                if r == 0:
                    raise ExpressionError("division by zero")
                e = e / r
        return e

    def unary(self):
        t = self.peek()
        if t.text in ("+", "-"):
            self.take()
            self.enter()
            v = self.unary()
            self.depth -= 1
            return -v if t.text == "-" else v
        return self.power()

    def power(self):
        base = self.atom()
        t = self.peek()
        if t.text == "^":
            raise ExpressionError(f"use '**' for powers, not '^' (position {t.pos})")
        if t.text == "**":
            self.take()
            self.enter()
            expo = self.unary()
            self.depth -= 1
            return _safe_pow(base, expo)
        return base

    def atom(self):
        t = self.take()
        if t.kind == "num":
            return _number(t.text)
        if t.kind == "name":
            if t.text == "sqrt":
                if self.peek().text != "(":
                    raise ExpressionError(f"'sqrt' must be called, at position {t.pos}")
                self.take()
                self.enter()
                arg = self.expr()
                self.depth -= 1
                self.expect(")")
                return _safe_pow(arg, sympy.Rational(1, 2))
            if self.peek().text == "(":
                raise ExpressionError(
                    f"function calls are not allowed ({t.text!r} at position {t.pos}); only sqrt(...)")
            if t.text not in self.symbols:
                known = ", ".join(sorted(self.symbols)) or "none"
                raise ExpressionError(f"unknown symbol {t.text!r} (declared symbols: {known})")
            return self.symbols[t.text]
        if t.text == "(":
            self.enter()
            e = self.expr()
            self.depth -= 1
            self.expect(")")
            return e
        raise ExpressionError(f"unexpected {t.text or 'end of expression'!r} at position {t.pos}")


def _number(text: str):
    if re.fullmatch(r"[0-9]+", text):
        if len(text) > MAX_CONSTANT_DIGITS:
            raise ExpressionError("integer literal too long")
        return sympy.Integer(int(text))
    # decimal literals are kept exact (0.1 -> 1/10) so that symbolic checks are exact
    f = Fraction(text)
    if max(len(str(f.numerator)), len(str(f.denominator))) > MAX_CONSTANT_DIGITS:
        raise ExpressionError(f"number {text!r} out of range")
    return sympy.Rational(f.numerator, f.denominator)


def _safe_pow(base, expo):
    if not expo.is_Rational:
        raise ExpressionError("exponents must be numbers (integers or fractions such as 1/2)")
    p, q = int(expo.p), int(expo.q)
    if abs(p) > MAX_EXPONENT or q > 8:
        raise ExpressionError(f"exponent {expo} out of range (|exponent| <= {MAX_EXPONENT})")
    if base.is_Rational:
        digits = max(len(str(abs(base.p))), len(str(base.q)))
        if digits * abs(p) / q > MAX_CONSTANT_DIGITS:
            raise ExpressionError("constant power too large")
    if base == 0 and expo <= 0:
        raise ExpressionError("zero raised to a non-positive power")
    return sympy.Pow(base, expo)


def parse_expression(text: str, symbols: Mapping[str, sympy.Symbol] | Iterable[str]):
    """Parse ``text`` into a sympy expression over the declared ``symbols``.

    ``symbols`` maps names to sympy symbols (or is an iterable of names, turned into real
    symbols).  Raises :class:`ExpressionError` with the reason; the caller adds file and key.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ExpressionError(f"expected an expression string or a number, got {type(text).__name__}")
    if isinstance(text, (int, float)):
        if isinstance(text, float) and not (text == text and abs(text) != float("inf")):
            raise ExpressionError(f"number {text} is not finite")
        text = repr(text)
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters ({len(text)})")
    if not text.strip():
        raise ExpressionError("empty expression")
    if not isinstance(symbols, Mapping):
        symbols = {s: sympy.Symbol(s, real=True) for s in symbols}
    expr = _Parser(text, symbols).parse()
    if _degree(expr, {}) > MAX_DEGREE:
        raise ExpressionError(f"expression too large: total degree above {MAX_DEGREE}")
    if _expanded_size(expr, {}) > MAX_EXPANDED_TERMS:
        raise ExpressionError(
            f"expression too large: expanding it would give more than {MAX_EXPANDED_TERMS} terms")
    return expr


def _degree(e, memo: dict) -> int:
    """An upper bound on the total degree of ``e`` in its symbols (powers count |exponent|)."""
    cap = MAX_DEGREE + 1
    if e in memo:
        return memo[e]
    if e.is_Atom:
        out = 1 if e.is_Symbol else 0
    elif e.is_Add:
        out = max(_degree(a, memo) for a in e.args)
    elif e.is_Mul:
        out = min(cap, sum(_degree(a, memo) for a in e.args))
    elif e.is_Pow and e.exp.is_Rational:
        out = min(cap, _degree(e.base, memo) * math.ceil(abs(e.exp)))
    else:
        out = min(cap, sum(_degree(a, memo) for a in e.args))
    memo[e] = out
    return out


def _expanded_size(e, memo: dict) -> int:
    """An upper bound on the number of terms of ``sympy.expand(e)``, capped just above the limit.

    Sums add, products multiply, and a power ``b**k`` of a sum of n terms has at most
    C(n + k - 1, k) distinct monomials (sympy merges repeated factors into such powers).
    """
    cap = MAX_EXPANDED_TERMS + 1
    if e in memo:
        return memo[e]
    if e.is_Atom:
        out = 1
    elif e.is_Add:
        out = min(cap, sum(_expanded_size(a, memo) for a in e.args))
    elif e.is_Mul:
        out = 1
        for a in e.args:
            out = min(cap, out * _expanded_size(a, memo))
    elif e.is_Pow:
        n = _expanded_size(e.base, memo)
        k = abs(e.exp)
        k = int(k) + (0 if k.is_Integer else 1) if k.is_Rational else 1
        out = 1 if n == 1 else min(cap, math.comb(n + k - 1, k) if k < cap else cap)
    else:
        out = min(cap, sum(_expanded_size(a, memo) for a in e.args) or 1)
    memo[e] = out
    return out


def is_identifier(name: str) -> bool:
    """True for names the grammar accepts as symbols (and that are not 'sqrt')."""
    return (isinstance(name, str) and re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name) is not None
            and name != "sqrt" and not name.startswith("__"))
