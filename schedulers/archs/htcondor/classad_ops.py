"""Values and operator semantics of the ClassAd language (pure).

Holds the two exceptional values UNDEFINED and ERROR and, for every operator
and built-in function, a builder that turns compiled operands (callables from
an evaluation context to a value) into a compiled node. The rules are those
stated in ``classad``'s docstring, after the HTCondor manual's "ClassAd
Evaluation Semantics"; the context object is opaque here, so this module knows
nothing about ads or scoping.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, TypeGuard


class _Special:
    """The two exceptional values; singletons compared by identity."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:  # pickling keeps the singleton
        return self.name


UNDEFINED = _Special("UNDEFINED")
ERROR = _Special("ERROR")

Value = object  # int | float | str | bool | UNDEFINED | ERROR
Compiled = Callable[[Any], Value]


# -- operator semantics ------------------------------------------------------


def truth(v: Value) -> Value:
    """True/False for booleans and numbers (non-zero), UNDEFINED kept, else ERROR."""
    kind = type(v)
    if kind is bool:
        return v
    if kind is int or kind is float:
        return v != 0
    return UNDEFINED if v is UNDEFINED else ERROR


def strict(a: Value, b: Value) -> Value | None:
    """ERROR if either is ERROR, else UNDEFINED if either is UNDEFINED, else None."""
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    return None


def is_number(v: Value) -> TypeGuard[int | float]:
    """An int, float or bool (bool is an int: arithmetic reads it as 0/1)."""
    return type(v) in (int, float, bool)


def _trunc_div(a: float, b: float) -> float:
    """C's integer division (``b`` non-zero): truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _div(a: float, b: float) -> Value:
    if b == 0:
        return ERROR
    if type(a) is float or type(b) is float:
        return a / b
    return _trunc_div(a, b)


def _mod(a: float, b: float) -> Value:
    if b == 0:
        return ERROR
    if type(a) is float or type(b) is float:
        return math.fmod(a, b)
    return a - b * _trunc_div(a, b)  # sign follows the dividend, as in C


_ARITH: dict[str, Callable[[float, float], Value]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": _div, "%": _mod,
}
# Operands of one kind only, numbers or strings (``compare`` checks): no one
# static type covers both and excludes the mix, hence Any.
ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}


def _strict_binary(apply: Callable[[Value, Value], Value], left: Compiled, right: Compiled) -> Compiled:
    """A binary node strict in ERROR then UNDEFINED; ``apply`` sees only proper values."""
    def run(ctx: Any) -> Value:
        a, b = left(ctx), right(ctx)
        bad = strict(a, b)
        return bad if bad is not None else apply(a, b)
    return run


def arith(op: str, left: Compiled, right: Compiled) -> Compiled:
    """``+ - * / %`` on numbers (booleans as 0/1); any string operand gives ERROR."""
    fn = _ARITH[op]

    def apply(a: Value, b: Value) -> Value:
        if not (is_number(a) and is_number(b)):
            return ERROR
        return fn(int(a) if type(a) is bool else a, int(b) if type(b) is bool else b)
    return _strict_binary(apply, left, right)


def compare(op: str, left: Compiled, right: Compiled) -> Compiled:
    """``< <= > >= == !=``: numbers with numbers, strings with strings (case-insensitive)."""
    fn = ORDER[op]

    def apply(a: Value, b: Value) -> Value:
        if type(a) is str and type(b) is str:
            return fn(a.lower(), b.lower())
        return fn(a, b) if is_number(a) and is_number(b) else ERROR
    return _strict_binary(apply, left, right)


def _identical(a: Value, b: Value) -> bool:
    return type(a) is type(b) and (a is b or a == b)


def meta(op: str, left: Compiled, right: Compiled) -> Compiled:
    if op == "=?=":
        return lambda ctx: _identical(left(ctx), right(ctx))
    return lambda ctx: not _identical(left(ctx), right(ctx))


def _kleene(decisive: bool) -> Callable[[Compiled, Compiled], Compiled]:
    """&& (decisive False) or || (decisive True): Kleene logic, left to right.

    The left operand decides alone when it is the decisive value or ERROR, so
    ``FALSE && ERROR`` is FALSE but ``ERROR && FALSE`` is ERROR; otherwise the
    right decides, and if neither did, UNDEFINED wins over the other boolean.
    """
    def build(left: Compiled, right: Compiled) -> Compiled:
        def run(ctx: Any) -> Value:
            a = truth(left(ctx))
            if a is decisive or a is ERROR:
                return a
            b = truth(right(ctx))
            if b is decisive or b is ERROR:
                return b
            return UNDEFINED if (a is UNDEFINED or b is UNDEFINED) else not decisive
        return run
    return build


logical_and = _kleene(False)
logical_or = _kleene(True)


def choose(cond: Compiled, then: Compiled, other: Compiled) -> Compiled:
    """``c ? a : b`` and ifThenElse: lazy; UNDEFINED/ERROR condition propagates."""
    def run(ctx: Any) -> Value:
        c = truth(cond(ctx))
        if c is True:
            return then(ctx)
        return other(ctx) if c is False else c
    return run


def elvis(first: Compiled, fallback: Compiled) -> Compiled:
    """``a ?: b``: a unless a is UNDEFINED."""
    def run(ctx: Any) -> Value:
        v = first(ctx)
        return fallback(ctx) if v is UNDEFINED else v
    return run


def negate(operand: Compiled) -> Compiled:
    def run(ctx: Any) -> Value:
        v = operand(ctx)
        if v is UNDEFINED or v is ERROR:
            return v
        return -int(v) if type(v) is bool else (-v if is_number(v) else ERROR)
    return run


def logical_not(operand: Compiled) -> Compiled:
    def run(ctx: Any) -> Value:
        v = truth(operand(ctx))
        return v if (v is UNDEFINED or v is ERROR) else not v
    return run


# -- functions ----------------------------------------------------------------


def _to_text(v: Value) -> str:
    if type(v) is bool:
        return "true" if v else "false"
    return v if type(v) is str else repr(v)


def _strcat(args: list[Compiled]) -> Compiled:
    def run(ctx: Any) -> Value:
        values = [a(ctx) for a in args]
        bad = next((v for v in values if v is ERROR), None) or next((v for v in values if v is UNDEFINED), None)
        return bad if bad is not None else "".join(_to_text(v) for v in values)
    return run


def _rounding(how: Callable[[float], float]) -> Callable[[list[Compiled]], Compiled]:
    def build(args: list[Compiled]) -> Compiled:
        (arg,) = args

        def run(ctx: Any) -> Value:
            v = arg(ctx)
            if v is UNDEFINED or v is ERROR:
                return v
            if not is_number(v) or (type(v) is float and not math.isfinite(v)):
                return ERROR
            return int(how(v))
        return run
    return build


def _half_away(x: float) -> float:
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _list_member(fold: bool) -> Callable[[list[Compiled]], Compiled]:
    """stringListMember(item, "a, b, c" [, delimiters]): is item one of the list's items."""
    def build(args: list[Compiled]) -> Compiled:
        def run(ctx: Any) -> Value:
            values = [a(ctx) for a in args]
            bad = next((v for v in values if v is ERROR or v is UNDEFINED), None)
            if bad is not None:
                return bad
            texts = [v for v in values if type(v) is str]
            if len(texts) != len(values):
                return ERROR
            item, text = texts[0], texts[1]
            delims = texts[2] if len(texts) > 2 else ", "
            for d in delims[1:]:
                text = text.replace(d, delims[0])
            items = [s.strip() for s in text.split(delims[0])] if delims else [text]
            if fold:
                return item.lower() in {s.lower() for s in items if s}
            return item in {s for s in items if s}
        return run
    return build


def _test(pred: Callable[[Value], bool]) -> Callable[[list[Compiled]], Compiled]:
    def build(args: list[Compiled]) -> Compiled:
        (arg,) = args
        return lambda ctx: pred(arg(ctx))
    return build


# name (lowercase) -> (min args, max args, builder)
FUNCTIONS: dict[str, tuple[int, int, Callable[[list[Compiled]], Compiled]]] = {
    "ifthenelse": (3, 3, lambda a: choose(a[0], a[1], a[2])),
    "isundefined": (1, 1, _test(lambda v: v is UNDEFINED)),
    "iserror": (1, 1, _test(lambda v: v is ERROR)),
    "isstring": (1, 1, _test(lambda v: type(v) is str)),
    "isinteger": (1, 1, _test(lambda v: type(v) is int)),
    "isreal": (1, 1, _test(lambda v: type(v) is float)),
    "isboolean": (1, 1, _test(lambda v: type(v) is bool)),
    "floor": (1, 1, _rounding(math.floor)),
    "ceiling": (1, 1, _rounding(math.ceil)),
    "round": (1, 1, _rounding(_half_away)),
    "strcat": (0, 64, _strcat),
    "stringlistmember": (2, 3, _list_member(False)),
    "stringlistimember": (2, 3, _list_member(True)),
}
KEYWORDS = {"true": True, "false": False, "undefined": UNDEFINED, "error": ERROR}
