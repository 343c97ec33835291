"""ClassAd parser and evaluator against hand-written tables (HTCondor manual semantics)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from schedlab.schedulers.archs.htcondor.classad import (
    ERROR,
    UNDEFINED,
    ClassAdSyntaxError,
    evaluate,
    matches,
    parse,
    quote,
    rank,
)

T, F, U, E = True, False, UNDEFINED, ERROR


def same(got: object, want: object) -> bool:
    """Identical in type and value (so 1 is not True and 1 is not 1.0)."""
    return type(got) is type(want) and got == want


VALUES = [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / 2", 3), ("-7 / 2", -3), ("7 % 3", 1), ("-7 % 3", -1),
    ("7.0 / 2", 3.5), ("1 + 2.5", 3.5), ("- 4", -4), ("2e3", 2000.0), (".5 + 1", 1.5),
    ("true + 1", 2), ('"a\\"b\\\\c\\n"', 'a"b\\c\n'),
    ("10 == 10", T), ("10 == 5", F), ('10 == "ABC"', E), ('"ABC" == "abc"', T), ("10 == UNDEFINED", U),
    ("UNDEFINED == UNDEFINED", U), ("10 != 10", F), ('"ABC" != "abc"', F), ("10 != undefined", U),
    ("10 =?= 10", T), ("10 =?= 5", F), ('10 =?= "ABC"', F), ('"ABC" =?= "abc"', F), ("10 =?= UNDEFINED", F),
    ("UNDEFINED =?= UNDEFINED", T), ("ERROR =?= ERROR", T), ("1 =?= 1.0", F), ("1 =?= true", F),
    ("10 =!= 10", F), ('10 =!= "ABC"', T), ('"ABC" =!= "abc"', T), ("10 =!= UNDEFINED", T),
    ("UNDEFINED =!= UNDEFINED", F), ("undefined is undefined", T), ("3 isnt undefined", T),
    ('"b" > "A"', T), ('"a" < 1', E), ("1 < 2.5", T), ("2 >= 2", T), ("undefined < 1", U), ("error < 1", E),
    ('10 * "A string"', E), ('"a" + "b"', E), ("1 + undefined", U), ("1 + error", E), ("undefined + error", E),
    ("1 / 0", E), ("1 % 0", E), ("1.0 / 0", E), ('-"x"', E), ("-undefined", U),
    ("!true", F), ("!0", T), ("!2.5", F), ("!undefined", U), ('!"x"', E),
    ('true && "foobar"', E), ("1 && 2.5", T), ("0 || 0.0", F), ("undefined || false", U), ("false && error", F), ("true || error", T),
    ("error && false", E),
    ("true && error", E), ("undefined && error", E), ("error || true", E),
    ("true ? 1 : 2", 1), ("false ? 1 : 2", 2), ("undefined ? 1 : 2", U), ('"s" ? 1 : 2', E), ("0 ? 1 : 2 ? 3 : 4", 3),
    ("undefined ?: 7", 7), ("5 ?: 7", 5),
    ("ifThenElse(true, 1, 1/0)", 1), ("IFTHENELSE(0.0, 1, 2)", 2), ("ifThenElse(undefined, 1, 2)", U),
    ("ifThenElse(error, 1, 2)", E), ("isUndefined(nothing)", T), ("isUndefined(0)", F), ("isError(1/0)", T),
    ("isString(\"x\")", T), ("isInteger(1.0)", F), ("isReal(1.0)", T), ("isBoolean(true)", T),
    ("floor(2.7)", 2), ("floor(-1.5)", -2), ("ceiling(2.1)", 3), ("round(2.5)", 3), ("round(-2.5)", -3),
    ("round(2)", 2), ('floor("x")', E), ("floor(undefined)", U), ("ceiling(1e400)", E),
    ('strcat("a", 1, true, 2.5)', "a1true2.5"), ("strcat()", ""), ('strcat("a", undefined)', U),
    ('strcat("a", error)', E), ('stringListMember("b", "a, b,c")', T), ('stringListMember("B", "a,b")', F),
    ('stringListIMember("B", "a,b")', T), ('stringListMember("x", "a;x", ";")', T), ('stringListMember(1, "1")', E),
]


@pytest.mark.parametrize(("text", "want"), VALUES)
def test_expression_table(text: str, want: object) -> None:
    got = evaluate(text, {}, {})
    assert got is want if want in (U, E) or isinstance(want, bool) else same(got, want), (text, got)


# Kleene's three-valued logic, left to right; rows (a, b, a && b, a || b).
TRUTH = [
    (T, T, T, T), (T, F, F, T), (T, U, U, T),
    (F, T, F, T), (F, F, F, F), (F, U, F, U),
    (U, T, U, T), (U, F, F, U), (U, U, U, U),
]
LITERAL = {T: "true", F: "false", U: "undefined"}


@pytest.mark.parametrize(("a", "b", "conj", "disj"), TRUTH)
def test_three_valued_truth_table(a: object, b: object, conj: object, disj: object) -> None:
    assert evaluate(f"{LITERAL[a]} && {LITERAL[b]}") is conj
    assert evaluate(f"{LITERAL[a]} || {LITERAL[b]}") is disj
    # the same through attribute references, where UNDEFINED comes from a missing name
    ad = {k: v for k, v in (("A", a), ("B", b)) if v is not U}
    assert evaluate("A && B", ad) is conj
    assert evaluate("A || B", ad) is disj


def test_scoping_my_then_target_and_case_insensitive() -> None:
    my = {"Memory": 1024, "Name": '"job"'}
    target = {"memory": 4096, "Disk": 10}
    assert evaluate("Memory", my, target) == 1024  # unscoped: MY first
    assert evaluate("TARGET.MEMORY", my, target) == 4096
    assert evaluate("my.memory", my, target) == 1024
    assert evaluate("Disk", my, target) == 10  # unscoped: falls back to TARGET
    assert evaluate("MY.Disk", my, target) is U
    assert evaluate("TARGET.Name", my, target) is U
    assert evaluate("Name", my, target) == "job"


def test_attribute_expressions_evaluate_in_their_own_ad() -> None:
    # the machine's Free refers to its own Memory even when reached via TARGET from the job
    job = {"Memory": 1, "Fits": "TARGET.Free >= 100"}
    machine = {"Memory": 500, "Used": 300, "Free": "Memory - Used"}
    assert evaluate("TARGET.Free", job, machine) == 200
    assert evaluate("Fits", job, machine) is T


def test_cycles_and_bad_attribute_values_give_error() -> None:
    ad = {"A": "B + 1", "B": "A + 1", "Self": "Self", "Bad": "1 +", "Odd": [1, 2], "Nothing": None}
    assert evaluate("A", ad) is E
    assert evaluate("Self", ad) is E
    assert evaluate("Bad", ad) is E
    assert evaluate("Odd", ad) is E
    assert evaluate("Nothing", ad) is U
    assert evaluate("isError(A) && isUndefined(Nothing)", ad) is T
    # a reference used twice (not a cycle) is fine
    assert evaluate("X + X", {"X": "Y * 2", "Y": 3}) == 12


def test_deep_chains_do_not_raise() -> None:
    ad = {f"A{i}": f"A{i + 1} + 1" for i in range(3000)}
    ad["A3000"] = 0
    value = evaluate("A0", ad)
    assert value == 3000 or value is E


@pytest.mark.parametrize(("text", "column"), [
    ("1 +", 4), ("Memory >= 2048 &&", 18), ("a = b", 3), ("(1 + 2", 7), ("1 2", 3), ('"abc', 1),
    ("foo(1)", 1), ("x + floor(1, 2)", 5), ("MY.", 4), ("1 # 2", 3), ("", 1), ("12abc", 1), ("a ? b", 6),
    ("(" * 500 + "1" + ")" * 500, 51), ("-" * 80 + "1", 51),
])
def test_syntax_error_column(text: str, column: int) -> None:
    with pytest.raises(ClassAdSyntaxError) as info:
        parse(text)
    assert info.value.column == column
    message = str(info.value)
    assert "\n" not in message and message.endswith(f"at column {column}")


def test_syntax_error_message_is_one_line_even_for_multiline_input() -> None:
    with pytest.raises(ClassAdSyntaxError) as info:
        parse("1 +\n\n")
    assert "\n" not in str(info.value)


def test_parse_is_cached_and_evaluate_accepts_text_or_expr() -> None:
    assert parse("Memory > 1") is parse("Memory > 1")
    assert evaluate(parse("Memory > 1"), {"Memory": 2}) is T


JOB = {
    "Owner": quote("alice"), "RequestMemory": 2048,
    "Requirements": 'TARGET.Memory >= MY.RequestMemory && TARGET.OpSys == "LINUX"',
    "Rank": "TARGET.Memory",
}
MACHINE = {
    "Memory": 4096, "OpSys": '"linux"', "Requirements": 'TARGET.Owner == "alice"', "Rank": "0",
}


def test_symmetric_matching() -> None:
    assert matches(JOB, MACHINE) and matches(MACHINE, JOB)
    small = {**MACHINE, "Memory": 1024}
    assert not matches(JOB, small)  # the job's side fails
    bob = {**JOB, "Owner": quote("bob")}
    assert not matches(bob, MACHINE)  # the machine's side fails
    anonymous = {k: v for k, v in JOB.items() if k != "Owner"}
    assert not matches(anonymous, MACHINE)  # UNDEFINED is not TRUE
    assert not matches({**JOB, "Requirements": "1"}, MACHINE)  # only TRUE counts
    assert not matches({**JOB, "Requirements": "1 +"}, MACHINE)  # unparsable text: ERROR
    assert matches({"Owner": quote("alice")}, {"Requirements": 'Owner == "ALICE"'})  # absent = true


def test_rank_orders_machines() -> None:
    machines = [{**MACHINE, "Memory": m, "Name": quote(n)} for m, n in ((4096, "b"), (8192, "c"), (2048, "a"))]
    ordered = sorted(machines, key=lambda m: -rank(JOB, m))
    assert [evaluate("Name", m) for m in ordered] == ["c", "b", "a"]
    assert rank(JOB, MACHINE) == 4096.0
    assert rank({"Rank": '"high"'}, MACHINE) == 0.0
    assert rank({"Rank": "TARGET.Missing"}, MACHINE) == 0.0
    assert rank({}, MACHINE) == 0.0
    assert rank({"Rank": "true"}, MACHINE) == 1.0
    assert rank({"Rank": "TARGET.Memory / 1024.0"}, MACHINE) == 4.0


def test_quote_round_trips() -> None:
    for text in ['a"b', "c\\d", "e\nf", ""]:
        assert evaluate(quote(text)) == text


literals = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.text(max_size=8).map(quote),
    st.sampled_from(["true", "false", "undefined", "error", "TRUE", "Undefined"]),
)


@given(literals)
def test_literal_is_identical_to_itself(text: str) -> None:
    assert evaluate(f"{text} =?= {text}") is T
    assert evaluate(f"({text}) =!= ({text})") is F


three = st.sampled_from([T, F, U])


@given(three, three, three)
def test_logic_agrees_with_kleene(a: object, b: object, c: object) -> None:
    table = {(r[0], r[1]): (r[2], r[3]) for r in TRUTH}
    ab_and, ab_or = table[(a, b)]
    assert evaluate(f"{LITERAL[a]} && {LITERAL[b]}") is ab_and
    assert evaluate(f"{LITERAL[a]} || {LITERAL[b]}") is ab_or
    # precedence: && binds tighter than ||
    assert evaluate(f"{LITERAL[c]} || {LITERAL[a]} && {LITERAL[b]}") is table[(c, ab_and)][1]
    # De Morgan holds in Kleene logic
    assert evaluate(f"!({LITERAL[a]} && {LITERAL[b]})") is evaluate(f"!{LITERAL[a]} || !{LITERAL[b]}")
