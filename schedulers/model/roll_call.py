"""A restarted actor asking every member of a group (node monitors,
startds) what they hold of its work, pure.

Only a complete answer may decide what to place again: a member that did
not answer (cut off, paused, slowed) may still run that work, and placing
it again would run it twice. So whoever failed to answer is asked again
until each has (``actors.common.roll_call.ask_everyone`` keeps the timer).
"""
from __future__ import annotations

from typing import Any


class RollCall:
    """Who of members ``0 .. n-1`` still owes an answer, and the answers."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.replies: dict[int, Any] = {}

    def to_ask(self) -> list[int]:
        return [i for i in range(self.n) if i not in self.replies]

    def take(self, member: int, reply: Any) -> None:
        """A call's outcome: a failed call (an exception) leaves ``member`` to ask again."""
        if not isinstance(reply, BaseException):
            self.replies[member] = reply

    def answers(self) -> list[Any]:
        """The answers in member order; complete once ``to_ask()`` is empty."""
        return [self.replies[i] for i in sorted(self.replies)]
