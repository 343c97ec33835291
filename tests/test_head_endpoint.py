"""A host's endpoint to a restartable head (actors/common/head_endpoint.py):
whatever the head answers, the host gets launches or an error, never a
greeting meant for the endpoint."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from schedlab.actors.common.head_endpoint import HeadEndpoint


class ScriptedHead:
    """The runtime seam: each call answers with the next scripted reply
    (the head's side is what is under test here, not a transport)."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = replies
        self.calls: list[str] = []

    async def call(self, handle: Any, method: str, *args: Any) -> Any:
        self.calls.append(method)
        return self.replies.pop(0)

    def lookup(self, name: str) -> Any:
        return None


def _endpoint(head: ScriptedHead) -> HeadEndpoint:
    ep = HeadEndpoint(handle="head", name="head", register="register_node")
    ep.bind(head, "machine-host-0", log=None, report=lambda: {"host": 0, "tasks": [], "finished": [], "unreported": []})
    return ep


def test_a_head_that_asks_again_to_register_is_an_error_not_launches() -> None:
    # Registered, then asked again (the head lost what it heard: a new active
    # controller): the host must not take the greeting for a list of launches.
    head = ScriptedHead([{"register": True}, None, {"register": True}])
    with pytest.raises(ConnectionError, match="register"):
        asyncio.run(_endpoint(head).exchange(0, b""))
    assert head.calls == ["exchange", "register_node", "exchange"]


def test_a_registered_host_gets_its_launches() -> None:
    head = ScriptedHead([{"register": True}, None, ([[1, 0, 0, [1.0], 5.0, 0.0]], [])])
    assert asyncio.run(_endpoint(head).exchange(0, b"")) == ([[1, 0, 0, [1.0], 5.0, 0.0]], [])
