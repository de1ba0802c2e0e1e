"""The housekeeper's retention pass: every log's expired segments go, a chunk of logs at
a time, with the loop free to serve others between chunks."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from brokerd.server.housekeeping import RETENTION_CHUNK, Housekeeper
from tests.unit.brokerd.storage.conftest import FakeClock, batch, commit
from tests.unit.brokerd.storage.helpers import manager


def test_retention_reaches_every_log_and_yields_between_chunks(tmp_path: Path) -> None:
    clock = FakeClock()
    logs = manager([tmp_path], clock, retention_ms=1000, file_delete_delay_ms=0)
    count = 3 * RETENTION_CHUNK + 5
    for index in range(count):
        log = logs.get_or_create("t", index)
        log.append_as_leader(batch(1), 0)
        log.roll()
        log.append_as_leader(batch(1), 0)
        commit(log)
    clock.advance(5000)
    stand_in: Any = None
    housekeeper = Housekeeper(stand_in, stand_in, logs, [], 600_000, 300_000)

    async def scenario() -> int:
        turns = 0

        async def other_work() -> None:
            nonlocal turns
            while True:
                turns += 1
                await asyncio.sleep(0)
        other = asyncio.get_running_loop().create_task(other_work())
        await asyncio.sleep(0)
        before = turns
        await housekeeper.enforce_retention(clock.now_ms)
        other.cancel()
        return turns - before

    assert asyncio.run(scenario()) >= 3  # at least once per full chunk
    for index in range(count):
        kept = logs.get("t", index)
        assert kept is not None and kept.log_start_offset == 1
        assert sorted(p.name for p in kept.directory.iterdir() if p.suffix == ".log") == [
            f"{1:020d}.log"]
    logs.close()
