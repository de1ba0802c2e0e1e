"""The acks=all commit wait: done, past its deadline, or its task cancelled."""

from __future__ import annotations

import asyncio

import pytest

from brokerd.server.handlers.produce import _until_done_or_deadline


def test_a_commit_before_the_deadline_is_its_result() -> None:
    async def scenario() -> bool:
        loop = asyncio.get_running_loop()
        committed: asyncio.Future[bool] = loop.create_future()
        loop.call_soon(committed.set_result, True)
        await _until_done_or_deadline(committed, loop.time() + 5)
        return committed.result()

    assert asyncio.run(scenario()) is True


def test_the_deadline_cancels_the_commit_and_returns() -> None:
    async def scenario() -> bool:
        loop = asyncio.get_running_loop()
        committed: asyncio.Future[bool] = loop.create_future()
        await _until_done_or_deadline(committed, loop.time() + 0.01)
        return committed.cancelled()

    assert asyncio.run(scenario()) is True


def test_cancelling_the_waiting_task_is_not_taken_for_the_deadline() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        committed: asyncio.Future[bool] = loop.create_future()
        waiting = loop.create_task(_until_done_or_deadline(committed, loop.time() + 5))
        await asyncio.sleep(0)
        waiting.cancel()
        await waiting

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(scenario())
