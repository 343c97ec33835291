"""A restarted actor's roll call (schedulers/model/roll_call.py): a member
whose call failed says nothing of what it holds, so it is asked again
until it answers (Sparrow's node monitors, HTCondor's startds)."""
from __future__ import annotations

import asyncio

from schedlab.actors.common.roll_call import ask_everyone
from schedlab.schedulers.model.roll_call import RollCall


def test_a_member_that_did_not_answer_is_asked_again_until_it_does() -> None:
    roll = RollCall(3)
    assert roll.to_ask() == [0, 1, 2]
    roll.take(0, {"started": [1]})
    roll.take(1, TimeoutError("cut off"))
    roll.take(2, {"started": []})
    assert roll.to_ask() == [1]
    roll.take(1, {"started": [2]})
    assert roll.to_ask() == [] and roll.answers() == [{"started": [1]}, {"started": [2]}, {"started": []}]


def test_ask_everyone_retries_the_silent_after_a_nap_and_gives_up_when_stopping() -> None:
    calls: list[int] = []
    naps: list[int] = []

    async def call(i: int) -> str:
        calls.append(i)
        if i == 1 and calls.count(1) < 3:
            raise ConnectionError("cut off")
        return f"m{i}"

    async def nap() -> bool:
        naps.append(1)
        return True

    assert asyncio.run(ask_everyone(3, call, nap)) == ["m0", "m1", "m2"]
    assert calls == [0, 1, 2, 1, 1] and len(naps) == 2

    async def stopping() -> bool:
        return False

    async def never(i: int) -> str:
        raise ConnectionError("cut off")

    assert asyncio.run(ask_everyone(2, never, stopping)) is None
