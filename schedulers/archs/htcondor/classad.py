"""A small, safe subset of HTCondor's ClassAd expression language (pure).

Contract, following the HTCondor manual's "ClassAd Evaluation Semantics":
- Values are ``int``, ``float``, ``str``, ``bool`` or the singletons
  ``UNDEFINED`` (a missing attribute) and ``ERROR`` (a type error, a cycle).
- Operators are total. Arithmetic and ``== != < <= > >=`` are strict: ERROR in
  either operand gives ERROR, else UNDEFINED gives UNDEFINED. Arithmetic on a
  string gives ERROR; comparing a string with a number gives ERROR; string
  comparison is case-insensitive. ``true``/``false`` count as 1/0 in arithmetic
  and comparison (Old ClassAds define them as those integers).
- ``=?=`` / ``=!=`` (also ``is`` / ``isnt``) are never UNDEFINED: same type and
  same value, strings compared case-sensitively, ``UNDEFINED =?= UNDEFINED``.
- ``&&`` / ``||`` are Kleene's three-valued logic, evaluated left to right:
  ``FALSE && x`` is FALSE without evaluating x, ``UNDEFINED && FALSE`` is
  FALSE, ``TRUE && UNDEFINED`` is UNDEFINED; numbers are true when non-zero; a
  string operand counts as ERROR.
- Scoping: ``MY.x`` is looked up in the ad being evaluated, ``TARGET.x`` in the
  other one, an unscoped ``x`` in MY then TARGET; names are case-insensitive.
  An attribute's own expression is evaluated in its own ad's context (MY and
  TARGET swap when a reference crosses to the other ad). A reference to an
  attribute already being evaluated is a cycle and gives ERROR.

An ad is a ``Mapping[str, object]``. A value that is a ``str`` is ClassAd
*expression text*, parsed lazily and cached, as in an ad file (so a string
attribute is written with quotes: ``{"Owner": '"alice"'}``; ``quote`` helps);
an ``Expr`` is used as is; int/float/bool/UNDEFINED/ERROR are plain values;
``None`` is UNDEFINED; anything else is ERROR. Expressions are compiled once
into closures (never Python eval/exec), since matchmaking evaluates them per
job x machine pair.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache

from schedlab.schedulers.archs.htcondor.classad_lexer import (
    ClassAdSyntaxError,
    Token,
    tokenize,
)
from schedlab.schedulers.archs.htcondor.classad_ops import (
    ERROR,
    FUNCTIONS,
    KEYWORDS,
    ORDER,
    UNDEFINED,
    Value,
    arith,
    choose,
    compare,
    elvis,
    is_number,
    logical_and,
    logical_not,
    logical_or,
    meta,
    negate,
)

__all__ = [
    "ERROR",
    "UNDEFINED",
    "ClassAdSyntaxError",
    "Expr",
    "evaluate",
    "matches",
    "parse",
    "quote",
    "rank",
]

_MISSING = object()
_MAX_DEPTH = 50  # nesting limit: deeper text is a syntax error, never a RecursionError
Compiled = Callable[["_Ctx"], Value]



class Expr:
    """A parsed expression: its source ``text`` and a compiled evaluator."""

    __slots__ = ("_fn", "text")

    def __init__(self, text: str, fn: Compiled) -> None:
        self.text = text
        self._fn = fn

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"


# -- context and attribute lookup ------------------------------------------


class _Ad:
    """An ad with case-insensitive lookup; the lowercase index is built on first miss."""

    __slots__ = ("_lower", "ad")

    def __init__(self, ad: Mapping[str, object]) -> None:
        self.ad = ad
        self._lower: dict[str, str] | None = None

    def find(self, name: str, lower: str) -> object:
        value = self.ad.get(name, _MISSING)
        if value is not _MISSING:
            return value
        if self._lower is None:
            self._lower = {k.lower(): k for k in self.ad if isinstance(k, str)}
        key = self._lower.get(lower)
        return _MISSING if key is None else self.ad[key]


class _Ctx:
    """Evaluation context: MY ad, TARGET ad, and the attributes being evaluated."""

    __slots__ = ("active", "my", "target")

    def __init__(self, my: _Ad, target: _Ad, active: set[tuple[int, str]]) -> None:
        self.my = my
        self.target = target
        self.active = active


@lru_cache(maxsize=8192)
def _attribute_expr(text: str) -> Expr | None:
    """The parsed attribute text, or None when it does not parse (evaluates to ERROR)."""
    try:
        return parse(text)
    except ClassAdSyntaxError:
        return None


def _resolve(raw: object, own: _Ad, other: _Ad, lower: str, active: set[tuple[int, str]]) -> Value:
    """The value of attribute ``lower`` of ``own`` whose stored value is ``raw``."""
    kind = type(raw)
    if kind is int or kind is float or kind is bool or raw is UNDEFINED or raw is ERROR:
        return raw
    if raw is None:
        return UNDEFINED
    if kind is str:
        expr = _attribute_expr(raw)
    elif isinstance(raw, Expr):
        expr = raw
    else:
        return ERROR
    if expr is None:
        return ERROR
    key = (id(own.ad), lower)
    if key in active:
        return ERROR  # a cycle: the attribute refers back to itself
    active.add(key)
    try:
        return expr._fn(_Ctx(own, other, active))
    except RecursionError:
        return ERROR
    finally:
        active.discard(key)


def _ref(scope: str, name: str) -> Compiled:
    lower = name.lower()

    def my(ctx: _Ctx) -> Value:
        raw = ctx.my.find(name, lower)
        return UNDEFINED if raw is _MISSING else _resolve(raw, ctx.my, ctx.target, lower, ctx.active)

    def target(ctx: _Ctx) -> Value:
        raw = ctx.target.find(name, lower)
        return UNDEFINED if raw is _MISSING else _resolve(raw, ctx.target, ctx.my, lower, ctx.active)

    def unscoped(ctx: _Ctx) -> Value:
        raw = ctx.my.find(name, lower)
        return target(ctx) if raw is _MISSING else _resolve(raw, ctx.my, ctx.target, lower, ctx.active)

    return {"my": my, "target": target, "": unscoped}[scope]


# -- parser -----------------------------------------------------------------------


class _Parser:
    """Recursive descent, lowest precedence first: ?: || && equality relational + * unary."""

    _LEVELS: tuple[frozenset[str], ...] = (
        frozenset({"==", "!=", "=?=", "=!=", "is", "isnt"}),
        frozenset({"<", "<=", ">", ">="}),
        frozenset({"+", "-"}),
        frozenset({"*", "/", "%"}),
    )

    def __init__(self, text: str) -> None:
        self.tokens = tokenize(text)
        self.pos = 0
        self.depth = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, op: str) -> Token:
        tok = self.take()
        if tok.kind != "op" or tok.text != op:
            raise self.unexpected(tok, f"expected {op!r}")
        return tok

    @staticmethod
    def unexpected(tok: Token, wanted: str) -> ClassAdSyntaxError:
        found = "end of expression" if tok.kind == "end" else repr(tok.text)
        return ClassAdSyntaxError(f"{wanted}, found {found}", tok.column)

    def is_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok.kind == "op" and tok.text in ops

    def whole(self) -> Compiled:
        tok = self.peek()
        if tok.kind == "end":
            raise ClassAdSyntaxError("empty expression", tok.column)
        fn = self.ternary()
        if self.peek().kind != "end":
            raise self.unexpected(self.peek(), "expected an operator")
        return fn

    def ternary(self) -> Compiled:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ClassAdSyntaxError("expression nested too deeply", self.peek().column)
        cond = self.binary_or()
        if self.is_op("?"):
            self.take()
            if self.is_op(":"):
                self.take()
                cond = elvis(cond, self.ternary())
            else:
                then = self.ternary()
                self.expect(":")
                cond = choose(cond, then, self.ternary())
        self.depth -= 1
        return cond

    def binary_or(self) -> Compiled:
        left = self.binary_and()
        while self.is_op("||"):
            self.take()
            left = logical_or(left, self.binary_and())
        return left

    def binary_and(self) -> Compiled:
        left = self.level(0)
        while self.is_op("&&"):
            self.take()
            left = logical_and(left, self.level(0))
        return left

    def level_op(self, i: int) -> str | None:
        tok = self.peek()
        text = tok.text if tok.kind == "op" else (tok.value if tok.kind == "name" else None)
        return text if text in self._LEVELS[i] else None

    def level(self, i: int) -> Compiled:
        if i == len(self._LEVELS):
            return self.unary()
        left = self.level(i + 1)
        while (op := self.level_op(i)) is not None:
            self.take()
            right = self.level(i + 1)
            op = {"is": "=?=", "isnt": "=!="}.get(op, op)
            if op in ("=?=", "=!="):
                left = meta(op, left, right)
            elif op in ORDER:
                left = compare(op, left, right)
            else:
                left = arith(op, left, right)
        return left

    def unary(self) -> Compiled:
        if self.is_op("-", "!", "+"):
            op = self.take().text
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise ClassAdSyntaxError("expression nested too deeply", self.peek().column)
            operand = self.unary()
            self.depth -= 1
            return negate(operand) if op == "-" else (logical_not(operand) if op == "!" else arith("+", lambda c: 0, operand))
        return self.primary()

    def primary(self) -> Compiled:
        tok = self.take()
        if tok.kind in ("int", "real", "string"):
            value = tok.value
            return lambda ctx: value
        if tok.kind == "op" and tok.text == "(":
            inner = self.ternary()
            self.expect(")")
            return inner
        if tok.kind == "name":
            return self.name(tok)
        raise self.unexpected(tok, "expected a value")

    def name(self, tok: Token) -> Compiled:
        word = str(tok.value)
        if self.is_op("("):
            return self.call(tok)
        if word in ("my", "target") and self.is_op("."):
            self.take()
            attr = self.take()
            if attr.kind != "name":
                raise self.unexpected(attr, "expected an attribute name")
            return _ref(word, attr.text)
        if word in KEYWORDS:
            value = KEYWORDS[word]
            return lambda ctx: value
        if word in ("is", "isnt"):
            raise self.unexpected(tok, "expected a value")
        return _ref("", tok.text)

    def call(self, tok: Token) -> Compiled:
        spec = FUNCTIONS.get(str(tok.value))
        if spec is None:
            raise ClassAdSyntaxError(f"unknown function {tok.text!r}", tok.column)
        self.expect("(")
        args: list[Compiled] = []
        if not self.is_op(")"):
            args.append(self.ternary())
            while self.is_op(","):
                self.take()
                args.append(self.ternary())
        self.expect(")")
        low, high, build = spec
        if not low <= len(args) <= high:
            want = str(low) if low == high else f"{low} to {high}"
            raise ClassAdSyntaxError(f"{tok.text}() takes {want} arguments, got {len(args)}", tok.column)
        return build(args)


# -- public API -------------------------------------------------------------------


@lru_cache(maxsize=8192)
def parse(text: str) -> Expr:
    """Parse ClassAd expression ``text``; cached, so the same text compiles once.

    Raises ClassAdSyntaxError(message, column) with a 1-based column.
    """
    return Expr(text, _Parser(text).whole())


def evaluate(expr: Expr | str, my: Mapping[str, object] | None = None,
             target: Mapping[str, object] | None = None) -> Value:
    """Evaluate ``expr`` with MY = ``my`` and TARGET = ``target`` (either may be absent).

    A ``str`` is parsed first (a syntax error raises). Never raises for any ad
    contents: bad attribute text, unknown value types and cycles give ERROR.
    """
    compiled = parse(expr) if isinstance(expr, str) else expr
    ctx = _Ctx(_Ad(my or {}), _Ad(target or {}), set())
    try:
        return compiled._fn(ctx)
    except RecursionError:
        return ERROR


def _attribute(ad: Mapping[str, object], other: Mapping[str, object], name: str) -> Value:
    """Evaluate attribute ``name`` of ``ad`` against ``other``; _MISSING if absent."""
    own = _Ad(ad)
    raw = own.find(name, name.lower())
    if raw is _MISSING:
        return _MISSING
    try:
        return _resolve(raw, own, _Ad(other), name.lower(), set())
    except RecursionError:
        return ERROR


def matches(job_ad: Mapping[str, object], machine_ad: Mapping[str, object]) -> bool:
    """Symmetric match: each ad's Requirements, evaluated with MY = itself and
    TARGET = the other, is TRUE (only the boolean TRUE counts: UNDEFINED,
    ERROR, numbers and strings do not). An ad without Requirements accepts any
    other, as if it said ``Requirements = true``.
    """
    for ad, other in ((job_ad, machine_ad), (machine_ad, job_ad)):
        value = _attribute(ad, other, "Requirements")
        if value is not _MISSING and value is not True:
            return False
    return True


def rank(ad: Mapping[str, object], other: Mapping[str, object]) -> float:
    """``ad``'s Rank of ``other`` as a float; absent, non-numeric or NaN counts as 0.0.

    Higher is preferred; the matchmaker sorts candidates by it.
    """
    value = _attribute(ad, other, "Rank")
    if not is_number(value):
        return 0.0
    result = float(value)
    return 0.0 if math.isnan(result) else result


def quote(text: str) -> str:
    """ClassAd string literal for ``text``, for putting plain strings into ads."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f'"{escaped}"'
