"""Connection framing and ordering with a fake transport (no sockets)."""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any

import pytest

from brokerd.protocol import ProtocolError
from brokerd.server import connection as connection_module
from brokerd.server.connection import Connection
from brokerd.server.request import Later


class FakeTransport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.reading = True
        self.aborted = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("10.1.2.3", 4567) if name == "peername" else default

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def abort(self) -> None:
        self.aborted = True

    def set_write_buffer_limits(self, high: int = 0, low: int = 0) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class Harness:
    """A connection whose processor echoes ``b"re:" + frame`` (or what a test decides)."""

    def __init__(self, max_request_bytes: int = 1 << 20,
                 receive_buffer: bytearray | None = None) -> None:
        from brokerd.server.transfer import ResponseWriter

        self.seen: list[bytes] = []
        self.later: list[Any] = []  # the coroutines of the Later responses handed out
        self.release: asyncio.Future[None] | None = None  # ends every "later" request's wait
        self.transport = FakeTransport()
        self.connection = Connection(self.process, "PLAINTEXT", max_request_bytes,
                                     lambda t: ResponseWriter(t, "pread"),
                                     receive_buffer=receive_buffer)
        self.connection.connection_made(self.transport)  # type: ignore[arg-type]

    async def process(self, connection: Connection, frame: memoryview
                      ) -> list[Any] | Later[list[Any] | None] | None:
        payload = bytes(frame)
        self.seen.append(payload)
        if payload.startswith(b"later"):  # an acks=all produce: answered once "replicated"
            coroutine = self._answer_later(payload)
            self.later.append(coroutine)
            return Later(coroutine)
        if payload.startswith(b"slow"):
            await asyncio.sleep(0.05)
        if payload.startswith(b"bad"):
            raise ProtocolError("cannot parse")
        if payload.startswith(b"silent"):
            return None
        return [b"re:", payload]

    async def _answer_later(self, payload: bytes) -> list[Any] | None:
        if self.release is None:
            self.release = asyncio.get_running_loop().create_future()
        await self.release
        if payload.startswith(b"later-bad"):
            raise ProtocolError("cannot answer")
        return [b"re:", payload]

    def feed(self, data: bytes, chunk: int) -> None:
        for start in range(0, len(data), chunk):
            piece = data[start : start + chunk]
            while piece:
                buffer = self.connection.get_buffer(len(piece))
                n = min(len(buffer), len(piece))
                buffer[:n] = piece[:n]
                self.connection.buffer_updated(n)
                piece = piece[n:]

    async def settle(self) -> None:
        await asyncio.sleep(0)
        await self.connection.drain()


@pytest.mark.parametrize("chunk", [1, 3, 7, 4096, 1 << 20])
def test_frames_split_anywhere_are_reassembled_in_order(chunk: int) -> None:
    async def scenario() -> Harness:
        harness = Harness()
        payloads = [b"slow-first", b"x" * 50_000, b"", b"silent", b"last"]
        harness.feed(b"".join(frame(p) for p in payloads), chunk)
        await harness.settle()
        return harness

    harness = asyncio.run(scenario())
    assert harness.seen == [b"slow-first", b"x" * 50_000, b"", b"silent", b"last"]
    # responses in request order; the slow first one did not let the others overtake it;
    # "silent" (acks=0) produced nothing
    assert b"".join(harness.transport.written) == (
        b"re:slow-first" + b"re:" + b"x" * 50_000 + b"re:" + b"re:last")


def test_large_frame_gets_its_own_buffer_filled_in_place() -> None:
    async def scenario() -> Harness:
        harness = Harness()
        harness.feed(frame(b"y" * 100_000)[:1000], 1000)
        buffer = harness.connection.get_buffer(-1)
        assert len(buffer) == 100_000 + 4 - 1000  # exactly the rest of the frame
        harness.feed(frame(b"y" * 100_000)[1000:], 1 << 20)
        await harness.settle()
        return harness

    assert asyncio.run(scenario()).seen == [b"y" * 100_000]


def test_every_frame_is_a_private_writable_buffer() -> None:
    """The log patches batch headers into the frame in place (its one copy of a small
    produce request), so small frames must be writable copies that the shared receive
    buffer's next read cannot change, and large ones writable too."""
    frames: list[memoryview] = []

    async def keep(connection: Connection, frame: memoryview) -> None:
        frames.append(frame)

    async def scenario() -> None:
        harness = Harness(receive_buffer=connection_module.new_receive_buffer())
        harness.connection._processor = keep
        harness.feed(frame(b"small-1") + frame(b"small-2"), 1 << 20)
        harness.feed(frame(b"other bytes") + frame(b"z" * 100_000), 1 << 20)
        await harness.settle()

    asyncio.run(scenario())
    assert [bytes(f[:7]) for f in frames] == [b"small-1", b"small-2", b"other b", b"zzzzzzz"]
    assert not any(f.readonly for f in frames)
    frames[0][0:1] = b"S"  # what the log does to a batch header
    assert bytes(frames[0]) == b"Small-1" and bytes(frames[1]) == b"small-2"


@pytest.mark.parametrize("chunk", [1, 5, 999, 1 << 20])
def test_connections_sharing_one_receive_buffer_keep_their_partial_frames(chunk: int) -> None:
    """Listeners give all their connections one receive buffer: a connection's unfinished
    frame must survive other connections' reads into it in between."""
    async def scenario() -> list[Harness]:
        shared = connection_module.new_receive_buffer()
        harnesses = [Harness(receive_buffer=shared) for _ in range(3)]
        streams = [b"".join(frame(b"c%d-%d-" % (n, i) + b"p" * (i * 700)) for i in range(30))
                   for n in range(3)]
        for start in range(0, max(map(len, streams)), chunk):
            for harness, stream in zip(harnesses, streams, strict=True):
                if start < len(stream):
                    harness.feed(stream[start : start + chunk], chunk)
        for harness in harnesses:
            await harness.settle()
        return harnesses

    for n, harness in enumerate(asyncio.run(scenario())):
        assert harness.seen == [b"c%d-%d-" % (n, i) + b"p" * (i * 700) for i in range(30)]


def test_idle_connection_keeps_no_receive_buffer_or_finished_task() -> None:
    async def scenario() -> Harness:
        harness = Harness(receive_buffer=connection_module.new_receive_buffer())
        harness.feed(frame(b"one") + frame(b"two"), 1 << 20)
        await harness.settle()
        return harness

    connection = asyncio.run(scenario()).connection
    assert connection._partial == b"" and connection._large is None
    assert connection._worker is None and connection._frames == []


@pytest.mark.parametrize("size", [-1, 1025])
def test_bad_size_closes_before_buffering(size: int, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> Harness:
        harness = Harness(max_request_bytes=1024)
        harness.feed(struct.pack(">i", size), 4)
        await harness.settle()
        return harness

    with caplog.at_level(logging.WARNING):
        harness = asyncio.run(scenario())
    assert harness.transport.aborted and harness.seen == []
    assert "10.1.2.3:4567" in caplog.text and "framing error" in caplog.text


def test_malformed_request_closes_and_stops_processing(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> Harness:
        harness = Harness()
        harness.feed(frame(b"bad") + frame(b"after"), 1 << 20)
        await harness.settle()
        return harness

    with caplog.at_level(logging.WARNING):
        harness = asyncio.run(scenario())
    assert harness.transport.aborted
    assert harness.seen == [b"bad"]
    assert harness.transport.written == []
    assert "malformed request" in caplog.text and "10.1.2.3:4567" in caplog.text


def test_mute_pauses_reading_until_every_reason_is_gone() -> None:
    async def scenario() -> Harness:
        harness = Harness()
        harness.connection.mute_for(0.05)
        harness.connection.pause("backlog")
        assert not harness.transport.reading
        await asyncio.sleep(0.1)
        assert not harness.transport.reading  # quota mute over, backlog still holds
        harness.connection.resume("backlog")
        assert harness.transport.reading
        return harness

    asyncio.run(scenario())


def test_backlog_of_pipelined_requests_pauses_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection_module, "MAX_QUEUED_FRAMES", 4)

    async def scenario() -> tuple[bool, Harness]:
        harness = Harness()
        harness.feed(b"".join(frame(b"slow%d" % i) for i in range(6)), 1 << 20)
        paused = not harness.transport.reading
        await harness.settle()
        return paused, harness

    paused, harness = asyncio.run(scenario())
    assert paused and harness.transport.reading
    assert len(harness.seen) == 6


def test_backlog_bytes_bound_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection_module, "MAX_QUEUED_BYTES", 100_000)

    async def scenario() -> tuple[bool, Harness]:
        harness = Harness()
        harness.feed(frame(b"slow" + b"z" * 60_000) + frame(b"slow" + b"z" * 60_000), 1 << 20)
        paused = not harness.transport.reading
        await harness.settle()
        return paused, harness

    paused, harness = asyncio.run(scenario())
    assert paused and harness.transport.reading and len(harness.seen) == 2


def test_a_large_frame_reuses_a_buffer_only_once_nothing_refers_to_it() -> None:
    """Large frames take their buffers from a per-thread pool: a buffer a handler still
    holds (a produce request parked until its replicas have it) is never handed out
    again, a released one is, without the zero-fill of a new bytearray."""
    kept: list[memoryview] = []

    async def keep_first(connection: Connection, frame: memoryview) -> None:
        if not kept:
            kept.append(frame[10:20])  # like records a parked produce request holds
        else:
            assert bytes(kept[0]) == b"a" * 10  # the next frame did not overwrite it

    async def scenario() -> None:
        harness = Harness()
        harness.connection._processor = keep_first
        harness.feed(frame(b"a" * 100_000), 1 << 20)
        await harness.settle()
        first = id(kept[0].obj)
        harness.feed(frame(b"b" * 90_000), 1 << 20)
        await harness.settle()
        assert harness.connection._large is None
        taken = connection_module.LARGE_FRAMES.take(50_000)
        assert id(taken.obj) != first  # still held through kept[0]
        del taken
        kept.clear()
        taken = connection_module.LARGE_FRAMES.take(50_000)
        assert id(taken.obj) == first and len(taken) == 50_000

    connection_module.LARGE_FRAMES.spares.clear()
    asyncio.run(scenario())


def test_the_large_frame_pool_keeps_a_pipeline_of_megabyte_frames_within_its_budget() -> None:
    """A producer's pipelined megabyte requests are each in a buffer of their own at once
    (queued, or being appended): once released, every one is taken again instead of a
    new zero-filled one, and no more than the budget is ever kept."""
    pool = connection_module._LargeFrameBuffers()
    megabyte = 1 << 20
    held = [pool.take(megabyte) for _ in range(12)]
    first = {id(view.obj) for view in held}
    held.clear()
    again = [pool.take(megabyte) for _ in range(12)]
    assert {id(view.obj) for view in again} == first
    again += [pool.take(megabyte) for _ in range(8)]  # past the 16 MiB budget
    assert sum(map(len, pool.spares)) == connection_module.SPARES_BUDGET_BYTES
    assert len({id(view.obj) for view in again}) == 20  # the rest are fresh, not kept


def test_a_later_response_lets_the_next_requests_run_and_keeps_the_order() -> None:
    async def scenario() -> tuple[Harness, list[bytes], list[bytes]]:
        harness = Harness()
        harness.release = asyncio.get_running_loop().create_future()
        harness.feed(frame(b"later-1") + frame(b"now-2") + frame(b"later-3")
                     + frame(b"silent"), 1 << 20)
        for _ in range(5):
            await asyncio.sleep(0)
        seen, written = list(harness.seen), list(harness.transport.written)
        harness.release.set_result(None)
        await harness.settle()
        return harness, seen, written

    harness, seen_before, written_before = asyncio.run(scenario())
    # every request was processed while the first one's answer was not ready ...
    assert seen_before == [b"later-1", b"now-2", b"later-3", b"silent"]
    assert written_before == []
    # ... and the answers went out in request order, nothing left behind
    assert b"".join(harness.transport.written) == b"re:later-1re:now-2re:later-3"
    assert harness.connection._unanswered == [] and harness.connection._answerer is None


def test_at_most_max_unanswered_requests_run_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection_module, "MAX_UNANSWERED", 2)

    async def scenario() -> tuple[Harness, list[bytes]]:
        harness = Harness()
        harness.release = asyncio.get_running_loop().create_future()
        harness.feed(b"".join(frame(b"later-%d" % i) for i in range(4)), 1 << 20)
        for _ in range(5):
            await asyncio.sleep(0)
        seen = list(harness.seen)
        harness.release.set_result(None)
        await harness.settle()
        return harness, seen

    harness, seen_before = asyncio.run(scenario())
    assert seen_before == [b"later-0", b"later-1"]
    assert b"".join(harness.transport.written) == b"".join(
        b"re:later-%d" % i for i in range(4))


def test_a_lost_connection_closes_the_later_responses_it_will_never_write() -> None:
    async def scenario() -> Harness:
        harness = Harness()
        harness.release = asyncio.get_running_loop().create_future()
        harness.feed(frame(b"later-1") + frame(b"later-2"), 1 << 20)
        for _ in range(5):
            await asyncio.sleep(0)
        harness.connection.connection_lost(None)
        await asyncio.sleep(0)
        return harness

    harness = asyncio.run(scenario())
    # the one being awaited ends with the cancelled task, the other is closed unstarted:
    # neither is left suspended, nor warns that it was never awaited
    assert [coroutine.cr_frame for coroutine in harness.later] == [None, None]
    assert harness.transport.written == []


def test_a_later_response_that_fails_closes_the_connection(
        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> Harness:
        harness = Harness()
        harness.release = asyncio.get_running_loop().create_future()
        harness.feed(frame(b"now-1") + frame(b"later-bad") + frame(b"later-3"), 1 << 20)
        for _ in range(5):
            await asyncio.sleep(0)
        harness.release.set_result(None)
        await harness.settle()
        return harness

    with caplog.at_level(logging.WARNING):
        harness = asyncio.run(scenario())
    assert harness.transport.aborted
    assert harness.transport.written == [b"re:now-1"]
    assert "malformed request" in caplog.text
