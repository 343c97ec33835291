"""The API store: Kubernetes' etcd as a replicated state machine on the
coordinator group (the group's Raft leader is the store leader).

What it keeps, after etcd v3 and the apiserver's storage layer:

- **Objects** keyed by (kind, name), each a msgpack-able value and its mod
  revision, which is the object's ``resourceVersion``.
- **One global revision**, bumped once per applied write op. (etcd bumps it
  once per transaction and numbers the keys inside with sub-revisions; one
  revision per op gives every watch event its own revision, so a watch
  answer cut off by ``limit`` always resumes cleanly after its last event.)
- **Guarded writes**: an update or delete may name the ``resourceVersion``
  it read; a mismatch is a conflict carrying the current version (the
  apiserver's GuaranteedUpdate; a bind is one on its pod). A create fails
  if the object exists. (Two profiles racing for a node's last room are
  settled by ``api_machine``'s room check, not here.)
- **Watches from a revision** over a bounded history: the changes of the last
  ``history`` revisions are kept; older ones are compacted, and a watcher
  asking from before the compacted revision is told ``gone`` (the
  apiserver's 410 "too old resource version") and must ``list`` again and
  resume from the revision that list was read at.
- **Field-indexed watches and lists** for the hot paths: each kind may name
  fields (pods: ``node``) whose value buckets keep their own change logs and
  member sets, so a kubelet watching pods on its node, or the scheduler
  watching unbound pods (``node`` None), reads only its own changes. Objects
  entering or leaving a bucket are reported as ADDED or DELETED in it, as
  the apiserver's watch cache does for a field selector: a bind is DELETED
  for the unbound-pods watcher and ADDED for the node's kubelet.

Reads (``get``, ``list``, ``watch``) are queries, served from the leader's
applied state without a log entry: not linearizable (a deposed or lagging
leader answers from an older prefix), but every answer is a prefix of the
one committed history, so a watcher never sees an event that did not happen
and never skips one; ``watch`` never moves a cursor backwards. Reads through
the log would be linearizable but would put whole lists into the log and
the group's dedup table. The apiserver serves watches from its cache the
same way.

Values are shared, never copied: the machine does not mutate a value it
stores or returns, and callers must not either.
"""
from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from operator import itemgetter
from typing import Any

import msgpack

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
OK, CONFLICT, NOT_FOUND, INVALID, ABORTED = "ok", "conflict", "not_found", "invalid", "aborted"

DEFAULT_HISTORY = 100_000  # revisions kept for watchers (etcd: 5 minutes' worth)
DEFAULT_INDEXES: dict[str, tuple[str, ...]] = {"pods": ("node",)}

# A change as a kind's log keeps it: (revision, type, kind, name, value, old)
# where ``old`` holds the object's indexed field values before the change
# (None if it did not exist), which is what places the change in the
# field buckets it left and entered. A watch event is its first five.
Change = tuple
Event = tuple  # (revision, type, kind, name, value)
IndexKey = tuple  # (kind, field, field value)

_revision_of = itemgetter(0)
_SCALARS = (str, int, bool, type(None))
_ARITY = {"create": (4, 4), "update": (4, 5), "delete": (3, 4)}  # op lengths, fewest and most


class ChangeLog:
    """Events in revision order, dropped from the front as history is
    compacted: a list with a head offset (bisect needs indexing, which a
    deque does in O(n)), trimmed in bulk once half of it is dead."""

    __slots__ = ("events", "head")

    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.head = 0

    def __len__(self) -> int:
        return len(self.events) - self.head

    def append(self, event: tuple) -> None:
        self.events.append(event)

    def first_revision(self) -> int | None:
        return self.events[self.head][0] if self.head < len(self.events) else None

    def drop_first(self) -> None:
        self.head += 1
        if self.head >= 1024 and 2 * self.head >= len(self.events):
            del self.events[: self.head]
            self.head = 0

    def after(self, revision: int) -> int:
        """Index of the first event with a revision above ``revision``."""
        return bisect_right(self.events, revision, lo=self.head, key=_revision_of)

    def live(self) -> list[tuple]:
        return self.events[self.head :]


class APIStoreMachine:
    """Commands (through the log):

    - ``("txn", ops)`` or ``("txn", ops, atomic)`` -> ``{"revision": R,
      "ok": all ops applied, "results": [[status, version], ...]}``, one pair
      per op, R the revision after the batch. Ops:
      ``("create", kind, name, value)``,
      ``("update", kind, name, value[, expected_version])``,
      ``("delete", kind, name[, expected_version])``; no expected version
      (or None) is unconditional. Statuses: ``ok`` (version: the write's
      revision), ``conflict`` (version: the object's current version; a
      create of an existing object, or an expected version that differs),
      ``not_found``, ``invalid`` (a malformed op: refused, never raised, so
      one bad client cannot stop the group). Ops are checked in order, each
      seeing the earlier ones' effects. Per op (default), each applies or
      fails alone: the scheduler's batch of binds. ``atomic``: all or none;
      if any op fails none is applied and ops that would have succeeded say
      ``aborted``.
    - ``("compact", revision)`` -> ``{"compacted": C, "revision": R}``: drop
      history up to ``revision`` now (it is also dropped as it falls out of
      the last ``history`` revisions).

    Queries (from the leader's applied state):

    - ``("get", kind, name)`` -> ``[value, version]`` or None.
    - ``("list", kind[, {field: value}])`` -> ``{"revision": R, "items":
      [(name, value, version), ...]}`` sorted by name; R is where a watch
      resumes so it misses nothing after the list.
    - ``("watch", kinds, since, limit[, {field: value}])`` -> ``{"gone":
      False, "events": [(revision, type, kind, name, value), ...], "more":
      bool, "revision": R}``: the changes after ``since`` to ``kinds`` (a
      kind or a list), in revision order, at most ``limit`` (None: all).
      R is the next ``since``: the last event's revision if ``more`` were
      cut off, else the current revision (so a watcher of a quiet kind still
      advances, as an etcd progress notification or a Kubernetes bookmark
      does, and does not fall behind the compaction). Or ``{"gone": True,
      "compacted": C, "revision": R}`` when ``since`` < C: relist.
    - ``("revision",)`` -> ``{"revision": R, "compacted": C}``.

    A filter names one indexed field; unknown commands, unknown queries and
    unindexed filter fields raise ValueError (a caller's bug, not data)."""

    def __init__(self, history: int = DEFAULT_HISTORY, indexes: Mapping[str, Iterable[str]] | None = None) -> None:
        if history < 1:
            raise ValueError(f"history must keep at least 1 revision, not {history}")
        self._reset(history, DEFAULT_INDEXES if indexes is None else indexes)

    def _reset(self, history: int, indexes: Mapping[str, Iterable[str]]) -> None:
        self.history = int(history)
        self.indexes: dict[str, tuple[str, ...]] = {k: tuple(fs) for k, fs in indexes.items()}
        self.revision = 0
        self.compacted = 0
        self.objects: dict[str, dict[str, tuple[Any, int]]] = {}
        self.logs: dict[str, ChangeLog] = {}  # per kind, of Changes
        self.bucket_logs: dict[IndexKey, ChangeLog] = {}  # of Events, typed as seen from the bucket
        self.members: dict[IndexKey, set[str]] = {}

    # -- commands ---------------------------------------------------------

    def apply(self, command: Any) -> Any:
        op = command[0]
        if op == "txn":
            return self._txn(command[1], bool(command[2]) if len(command) > 2 else False)
        if op == "compact":
            self._compact_to(min(int(command[1]), self.revision))
            return {"compacted": self.compacted, "revision": self.revision}
        raise ValueError(f"unknown API store command {op!r}")

    def _txn(self, ops: list, atomic: bool) -> dict:
        if atomic:
            overlay: dict[tuple[str, str], tuple[Any, int] | None] = {}

            def seen(kind: str, name: str) -> tuple[Any, int] | None:
                key = (kind, name)
                return overlay[key] if key in overlay else self._get(kind, name)

            results, rev = [], self.revision
            for op in ops:
                status = self._check(op, seen)
                if status[0] == OK:
                    rev += 1
                    overlay[(op[1], op[2])] = None if op[0] == "delete" else (op[3], rev)
                    status = [OK, rev]
                results.append(status)
            if any(s[0] != OK for s in results):
                results = [[ABORTED, None] if s[0] == OK else s for s in results]
                return {"revision": self.revision, "ok": False, "results": results}
        results = []
        for op in ops:
            status = self._check(op, self._get)
            if status[0] == OK:
                status = [OK, self._write(op)]
            results.append(status)
        self._compact_to(self.revision - self.history)
        return {"revision": self.revision, "ok": all(s[0] == OK for s in results), "results": results}

    def _check(self, op: Any, seen: Callable[[str, str], tuple[Any, int] | None]) -> list:
        """``[status, version]`` the op would get against ``seen`` (``[OK,
        None]`` if it would apply)."""
        if not self._well_formed(op):
            return [INVALID, None]
        kind, name = op[1], op[2]
        current = seen(kind, name)
        if op[0] == "create":
            return [CONFLICT, current[1]] if current is not None else [OK, None]
        if current is None:
            return [NOT_FOUND, None]
        expected = _expected(op)
        if expected is not None and expected != current[1]:
            return [CONFLICT, current[1]]
        return [OK, None]

    def _well_formed(self, op: Any) -> bool:
        if not isinstance(op, (list, tuple)) or not op or not isinstance(op[0], str):
            return False
        arity = _ARITY.get(op[0])
        if arity is None or not arity[0] <= len(op) <= arity[1]:
            return False
        if not (isinstance(op[1], str) and isinstance(op[2], str)):
            return False
        expected = _expected(op)
        if expected is not None and (not isinstance(expected, int) or isinstance(expected, bool)):
            return False
        if op[0] == "delete":
            return True
        # An indexed field must hold a scalar that equals itself (no float:
        # NaN would never find its bucket again): it becomes a bucket key.
        return all(isinstance(v, _SCALARS) for v in self._keys(op[1], op[3]))

    def _write(self, op: Any) -> int:
        """Apply one checked op; its revision."""
        kind, name = op[1], op[2]
        objs = self.objects.setdefault(kind, {})
        before = objs.get(name)
        old = self._keys(kind, before[0]) if before is not None else None
        self.revision += 1
        if op[0] == "delete":
            del objs[name]
            assert before is not None  # the del above: it existed
            change = (self.revision, DELETED, kind, name, before[0], old)
        else:
            objs[name] = (op[3], self.revision)
            change = (self.revision, MODIFIED if before is not None else ADDED, kind, name, op[3], old)
        log = self.logs.get(kind)
        if log is None:
            log = self.logs[kind] = ChangeLog()
        log.append(change)
        self._file(change)
        return self.revision

    def _file(self, change: Change, track_members: bool = True) -> None:
        """Put a change into the logs of the buckets it touches and, unless
        told not to (a restore replaying history), their member sets."""
        name = change[3]
        for key, event in self._bucket_events(change):
            log = self.bucket_logs.get(key)
            if log is None:
                log = self.bucket_logs[key] = ChangeLog()
            log.append(event)
            if not track_members:
                continue
            if event[1] == DELETED:
                bucket = self.members[key]
                bucket.discard(name)
                if not bucket:
                    del self.members[key]
            elif event[1] == ADDED:
                self.members.setdefault(key, set()).add(name)

    def _bucket_events(self, change: Change) -> list[tuple[IndexKey, Event]]:
        """The events a change makes in each field bucket it leaves, enters
        or stays in."""
        rev, typ, kind, name, value, old = change
        fields = self.indexes.get(kind)
        if not fields:
            return []
        new = self._keys(kind, value) if typ != DELETED else None
        out: list[tuple[IndexKey, Event]] = []
        for i, f in enumerate(fields):
            if old is not None and new is not None and old[i] == new[i]:
                out.append(((kind, f, new[i]), (rev, MODIFIED, kind, name, value)))
                continue
            if old is not None:
                out.append(((kind, f, old[i]), (rev, DELETED, kind, name, value)))
            if new is not None:
                out.append(((kind, f, new[i]), (rev, ADDED, kind, name, value)))
        return out

    def _keys(self, kind: str, value: Any) -> tuple:
        """The value's indexed field values (None where missing)."""
        fields = self.indexes.get(kind, ())
        if not isinstance(value, dict):
            return (None,) * len(fields)
        if len(fields) == 1:  # the usual case (pods by node), on every write
            return (value.get(fields[0]),)
        return tuple([value.get(f) for f in fields])

    def _compact_to(self, revision: int) -> None:
        """Forget the changes at or below ``revision``: from the kind logs,
        and from the head of each bucket log they were filed in (a bucket
        log is in revision order, so its head is always the one to go)."""
        if revision <= self.compacted:
            return
        self.compacted = revision
        for log in self.logs.values():
            while (first := log.first_revision()) is not None and first <= revision:
                change = log.events[log.head]
                log.drop_first()
                for key, _ in self._bucket_events(change):
                    blog = self.bucket_logs[key]
                    blog.drop_first()
                    if not len(blog):
                        del self.bucket_logs[key]  # field values come and go (node names)

    # -- queries ----------------------------------------------------------

    def query(self, command: Any) -> Any:
        op = command[0]
        if op == "get":
            return self._get_wire(command[1], command[2])
        if op == "list":
            return self._list(command[1], command[2] if len(command) > 2 else None)
        if op == "watch":
            return self._watch(command[1], int(command[2]), command[3], command[4] if len(command) > 4 else None)
        if op == "revision":
            return {"revision": self.revision, "compacted": self.compacted}
        raise ValueError(f"unknown API store query {op!r}")

    def _get(self, kind: str, name: str) -> tuple[Any, int] | None:
        objs = self.objects.get(kind)
        return objs.get(name) if objs is not None else None

    def _get_wire(self, kind: str, name: str) -> list | None:
        found = self._get(kind, name)
        return list(found) if found is not None else None

    def _list(self, kind: str, where: dict | None) -> dict:
        objs = self.objects.get(kind, {})
        if where is None:
            names: Iterable[str] = objs
        else:
            names = self.members.get(self._bucket(kind, where), ())
        items = [(n, *objs[n]) for n in sorted(names)]
        return {"revision": self.revision, "items": items}

    def _bucket(self, kind: str, where: dict) -> IndexKey:
        if len(where) != 1:
            raise ValueError(f"a filter names one indexed field, not {sorted(where)}")
        ((field, value),) = where.items()
        if field not in self.indexes.get(kind, ()):
            raise ValueError(f"{kind} are not indexed by {field!r} (indexes: {self.indexes})")
        return (kind, field, value)

    def _watch(self, kinds: str | list, since: int, limit: int | None, where: dict | None) -> dict:
        if since < self.compacted:
            return {"gone": True, "compacted": self.compacted, "revision": self.revision}
        kinds = [kinds] if isinstance(kinds, str) else list(dict.fromkeys(kinds))
        if where is None:
            logs = [self.logs.get(k) for k in kinds]
        else:
            logs = [self.bucket_logs.get(self._bucket(k, where)) for k in kinds]
        cap = None if limit is None or limit <= 0 else int(limit)
        parts, available = [], 0
        for log in logs:
            if log is None:
                continue
            i = log.after(since)
            available += len(log.events) - i
            part = log.events[i:] if cap is None else log.events[i : i + cap]
            if part:
                parts.append(part)
        merged: Iterable[tuple] = parts[0] if len(parts) == 1 else heapq.merge(*parts, key=_revision_of)
        events = [e[:5] for e in islice(merged, cap)]
        more = cap is not None and available > cap
        nxt = events[-1][0] if more else max(since, self.revision)
        return {"gone": False, "events": events, "more": more, "revision": nxt}

    # -- snapshot ---------------------------------------------------------

    def snapshot(self) -> bytes:
        # Lists of pairs throughout, never maps: msgpack refuses int map
        # keys on unpacking, and pairs keep the order the original has.
        objects = [[k, [[n, v, r] for n, (v, r) in objs.items()]] for k, objs in self.objects.items()]
        logs = [[k, log.live()] for k, log in self.logs.items()]
        indexes = [[k, list(fs)] for k, fs in self.indexes.items()]
        return msgpack.packb(
            [self.history, indexes, self.revision, self.compacted, objects, logs], use_bin_type=True
        )

    def restore(self, data: bytes) -> None:
        history, indexes, revision, compacted, objects, logs = msgpack.unpackb(
            data, raw=False, strict_map_key=False  # values may be user maps with int keys
        )
        self._reset(history, {k: fs for k, fs in indexes})
        self.revision, self.compacted = revision, compacted
        for kind, items in objects:
            self.objects[kind] = {n: (v, r) for n, v, r in items}
        for kind, changes in logs:
            log = self.logs[kind] = ChangeLog()
            for rev, typ, k, name, value, old in changes:
                change = (rev, typ, k, name, value, tuple(old) if old is not None else None)
                log.append(change)
                self._file(change, track_members=False)
        # Member sets hold the present, not the history: from the objects.
        for kind, objs in self.objects.items():
            fields = self.indexes.get(kind, ())
            for name, (value, _) in objs.items():
                for f, v in zip(fields, self._keys(kind, value)):
                    self.members.setdefault((kind, f, v), set()).add(name)


def _expected(op: list | tuple) -> Any:
    """The resourceVersion an update or delete names (None: unconditional)."""
    if op[0] == "create" or len(op) < _ARITY[op[0]][1]:
        return None
    return op[-1]


@dataclass(frozen=True)
class APIStoreMachineFactory:
    """Builds each replica's machine (picklable, for the live engine)."""

    history: int = DEFAULT_HISTORY
    indexes: tuple[tuple[str, tuple[str, ...]], ...] = tuple(DEFAULT_INDEXES.items())

    def __call__(self) -> APIStoreMachine:
        return APIStoreMachine(self.history, dict(self.indexes))
