"""A shell asking every member of a group until each has answered
(``schedulers.model.roll_call.RollCall`` decides who is still owed)."""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from schedlab.schedulers.model.roll_call import RollCall


async def ask_everyone(n: int, call: Callable[[int], Awaitable[Any]], nap: Callable[[], Awaitable[bool]]) -> list[Any] | None:
    """Every member's answer to ``call(i)``, in member order, asking the ones
    whose call failed again after ``nap()``; None if ``nap`` says the actor
    is stopping first."""
    roll = RollCall(n)
    while True:
        ask = roll.to_ask()
        for i, reply in zip(ask, await asyncio.gather(*(call(i) for i in ask), return_exceptions=True)):
            roll.take(i, reply)
        if not roll.to_ask():
            return roll.answers()
        if not await nap():
            return None
