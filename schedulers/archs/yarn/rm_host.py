"""What the ResourceManager's mixins (:mod:`rm_ends`, :mod:`rm_queries`,
:mod:`rm_recovery`) use of the class they are mixed into,
:class:`rm_state.RMState`: its books and the steps they call.

Each mixin method takes ``self: RMHost``, so mypy checks a mixin's body
against this list, and checks RMState against it wherever one of those
methods is called on it. Typing only: nothing imports it at run time.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from schedlab.schedulers.archs.yarn.messages import AppRecord, RunningReport
from schedlab.schedulers.archs.yarn.requests import TaskAsk
from schedlab.schedulers.archs.yarn.rm_books import AppBook, Held, RMConfig
from schedlab.schedulers.archs.yarn.scheduler import ClusterState, YarnScheduler
from schedlab.schedulers.events.contract import EventType


class RMHost(Protocol):
    # The books (RMState.__init__ says what each holds).
    scheduler: YarnScheduler
    state: ClusterState
    config: RMConfig
    recovering: bool
    node_capacity: np.ndarray
    apps: dict[int, AppBook]
    held: dict[int, Held]
    task_container: dict[tuple[int, int], int]
    by_node: dict[int, dict[int, None]]
    started_on: dict[int, dict[tuple[int, int], int]]
    kills: dict[int, list[list[int]]]
    kill_pending: dict[tuple[int, int], int]
    registered: dict[int, None]
    written_off: dict[int, None]
    orphans: dict[int, list[tuple[int, RunningReport]]]
    orphan_finished: dict[int, dict[int, int]]
    preemptions: dict[str, int]
    foreign: dict[int, dict[tuple[int, int], np.ndarray]]
    am_heard: dict[int, float]

    # RMState's own steps.
    def _event(self, kind: EventType, **fields: object) -> None: ...
    def _check(self, record: AppRecord) -> tuple[str, str]: ...
    def _admit(self, record: AppRecord, leaf: str) -> AppBook: ...
    def _ask_am(self, book: AppBook, now: float) -> None: ...
    def _stop(self, cid: int) -> Held: ...
    def _register(self, node: int) -> None: ...
    def _add_asks(self, book: AppBook, asks: list[TaskAsk], now: float) -> list[int]: ...
    def _check_caller(self, app_id: int, attempt: int | None) -> tuple[AppBook | None, str]: ...
    def node_lost(self, node: int, now: float) -> list[int]: ...

    # The mixins' steps they call on each other.
    def _end_app(self, book: AppBook, state: str, now: float) -> list[int]: ...
    def _am_failed(self, book: AppBook, now: float, *, counted: bool, reason: str) -> None: ...
    def _learned_finished(self, book: AppBook, task: int, node: int, now: float) -> None: ...
    def _kill_on(self, node: int, rep: RunningReport) -> None: ...
    def _adopt(self, node: int, rep: RunningReport, now: float) -> bool: ...
    def _reconcile(self, book: AppBook, now: float) -> None: ...
    def _settle_app(self, book: AppBook, now: float) -> None: ...
