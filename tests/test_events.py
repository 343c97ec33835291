"""The event contract (schedlab.schedulers.events): every event is declared
once, written only through its declaration, and read through the same
objects. A run's events.jsonl is checked against the declarations in the
conformance suite (every architecture, both engines) and the federation's
tests (tests.conftest.assert_events_declared)."""
from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest

from schedlab.actors.common.events import EventLog
from schedlab.schedulers import arch as registry
from schedlab.schedulers.events import EventFieldError, EventType, check_line, declared, owners
from schedlab.schedulers.events.contract import opt, req
from schedlab.schedulers.events.shared import JOB_SCHEDULED, TXN

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("actors", "schedulers", "scripts", "cli", "api", "experiments", "tests")  # every folder of .py files


def _log() -> EventLog:
    return EventLog("me", lambda: 1.5)


def test_an_event_renders_as_before_fields_in_order_then_event_t_actor() -> None:
    log = _log()
    log.emit(JOB_SCHEDULED, job_id=3, scheduler="s", attempts=1)
    assert log.drain() == ['{"job_id":3,"scheduler":"s","attempts":1,"event":"job_scheduled","t":1.5,"actor":"me"}']


def test_emit_refuses_a_plain_string_a_missing_field_and_an_undeclared_one() -> None:
    log = _log()
    with pytest.raises(EventFieldError, match="not a str"):
        log.emit("job_scheduled", job_id=3, scheduler="s", attempts=1)  # type: ignore[arg-type]
    with pytest.raises(EventFieldError, match=r"missing required \['attempts'\]"):
        log.emit(JOB_SCHEDULED, job_id=3, scheduler="s")
    with pytest.raises(EventFieldError, match=r"undeclared \['atempts'\]"):
        log.emit(JOB_SCHEDULED, job_id=3, scheduler="s", attempts=1, atempts=2)
    assert len(log) == 0  # nothing half-written


def test_optional_fields_may_be_left_out_and_t_given() -> None:
    log = _log()
    log.emit(TXN, scheduler="s", job_id=1, claims=2, committed=2, think=0.0, placed=[[0, 1], [1, 1]], t=1.0)
    e = json.loads(log.drain()[0])
    assert "conflicted" not in e and "rtt_ms" not in e and e["t"] == 1.0
    assert not TXN.field("conflicted").required and "0" in (TXN.field("conflicted").absent or "")


def test_a_declaration_is_its_name_and_survives_pickling() -> None:
    """Readers index by_event's name-keyed lists with the constant; Ray
    ships shells (and their constants) by pickling."""
    assert TXN == "txn" and {"txn": 1}[TXN] == 1 and json.dumps({"event": TXN}) == '{"event": "txn"}'
    with pytest.raises(AttributeError, match="immutable"):
        TXN.required = frozenset()  # type: ignore[misc]
    again = pickle.loads(pickle.dumps(TXN))
    assert type(again) is EventType and again == TXN and again.required == TXN.required and again.fields == TXN.fields


def test_a_declaration_refuses_duplicate_fields_stamp_fields_and_unknown_types() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        EventType("x", "m", (req("a", "int"), opt("a", "int", "never")))
    with pytest.raises(ValueError, match="stamp"):
        EventType("x", "m", (req("actor", "str"),))
    with pytest.raises(ValueError, match="unknown field types"):
        EventType("x", "m", (req("a", "integer"),))


def test_every_declaration_is_complete_and_every_name_declared_once() -> None:
    every = declared()
    assert len(every) == sum(len(v) for v in owners().values())  # declared() raises on a name declared twice
    assert set(owners()) >= {"shared", *registry.names()}
    for name, e in every.items():
        assert e.name == name and e.meaning, name
        for f in e.fields:
            assert f.absent is None or f.absent.strip(), f"{name}.{f.name}: an optional field says what its absence means"


def test_check_line_reads_a_kept_line_against_its_declaration() -> None:
    d = declared()
    good = {"job_id": 3, "scheduler": "s", "attempts": 1, "event": "job_scheduled", "t": 1.5, "actor": "me"}
    check_line(d, good)
    for bad, why in (({**good, "event": "job_schedueld"}, "not declared"), ({**good, "attempts": "1"}, "not a int"),
                     ({k: v for k, v in good.items() if k != "attempts"}, "missing")):
        with pytest.raises(EventFieldError, match=why):
            check_line(d, bad)


def _calls(path: Path) -> list[tuple[int, str]]:
    """(line, what) of each event written or read by a literal name: an
    ``emit``/``_event`` call whose event is a string, and a comparison of an
    event's ``"event"`` with a string literal."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if fn in ("emit", "_event") and node.args and isinstance(node.args[0], (ast.Constant, ast.JoinedStr)):
                hits.append((node.lineno, f"{fn}({ast.unparse(node.args[0])})"))
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            reads_event = any(isinstance(s, ast.Subscript) and isinstance(s.slice, ast.Constant) and s.slice.value == "event"
                              for s in sides)
            literal = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)
                       or isinstance(s, (ast.Tuple, ast.List, ast.Set))
                       and any(isinstance(x, ast.Constant) and isinstance(x.value, str) for x in s.elts)]
            if reads_event and literal:
                hits.append((node.lineno, ast.unparse(node)))
    return hits


def test_no_code_writes_or_matches_an_event_by_a_string_literal() -> None:
    hits = [f"{p.relative_to(ROOT)}:{line}: {what}" for where in SOURCES for p in sorted((ROOT / where).rglob("*.py"))
            if p != Path(__file__).resolve()  # this file writes literals on purpose: the contract refusing them
            for line, what in _calls(p)]
    assert not hits, "use the declared EventType (schedlab.schedulers.events):\n" + "\n".join(hits)


def test_the_literal_check_can_fail(tmp_path: Path) -> None:
    p = tmp_path / "x.py"
    p.write_text('log.emit("txn", a=1)\nself._event(f"app_{s}")\nif e["event"] == "txn": pass\nlog.emit(TXN, a=1)\n'
                 'if e["event"] in ("txn", TXN): pass\nif e["event"] in (TXN, COMMIT): pass\n')
    assert [line for line, _ in _calls(p)] == [1, 2, 3, 5]


def test_readers_index_events_by_declared_names_only() -> None:
    """``ev.get("name", ...)`` / ``ev["name"]`` over by_event's lists with a
    literal that is a declared event's name: read it through the constant."""
    names = set(declared())
    hits = []
    for where in SOURCES:
        for p in sorted((ROOT / where).rglob("*.py")):
            for node in ast.walk(ast.parse(p.read_text())):
                key = None
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "ev" and node.args):
                    key = node.args[0]
                elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "ev":
                    key = node.slice
                if isinstance(key, ast.Constant) and key.value in names:
                    hits.append(f"{p.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not hits, "\n".join(hits)


def test_the_jobs_table_counts_preemptions_in_every_declared_shape() -> None:
    """``preempted`` has three shapes (a decision with victims; one event per
    victim pod with the preemptor's by_*; one per container of an app): the
    table read only the first and raised KeyError on the others' runs."""
    from schedlab.actors.analysis.tables import jobs

    sub = [{"event": "job_submitted", "t": 0.0, "actor": "submitter", "job_id": j, "job_class": "b", "kind": "batch",
            "tasks": 1, "request": [1.0, 1.0], "scheduler": "s"} for j in (1, 2, 3)]
    shapes = [{"event": "preempted", "t": 1.0, "actor": "a", "job_id": 9, "priority": 5, "victims": [[1, 0, 0, 0]]},
              {"event": "preempted", "t": 1.0, "actor": "a", "scheduler": "s", "job_id": 2, "task": 0, "priority": 0,
               "by_job": 9, "by_task": 0, "by_priority": 5, "node": 1},
              {"event": "preempted", "t": 1.0, "actor": "a", "app": 3, "task": 0, "container": 7, "node": 1,
               "queue": "root.a", "am": False, "at": 1.0}]
    for e in sub + shapes:
        check_line(declared(), e)
    rows = {r["job_id"]: r for r in jobs(sub + shapes)}
    assert [rows[j]["preemptions"] for j in (1, 2, 3)] == [1, 1, 1]
