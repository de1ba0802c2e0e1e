"""brokerd.replication.client's receive side: size-prefixed frames cut out of whatever
pieces the socket delivers, large frames received in place into a buffer of their own,
and a lost connection failing the waiting read."""

from __future__ import annotations

import asyncio
import struct

import pytest

from brokerd.replication.client import RECEIVE_BUFFER_BYTES, _FrameProtocol


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def deliver(protocol: _FrameProtocol, data: bytes, piece: int) -> None:
    """Feed ``data`` as the event loop would: into the buffers the protocol hands out,
    at most ``piece`` bytes at a time."""
    view = memoryview(data)
    while view:
        buffer = protocol.get_buffer(-1)
        count = min(piece, len(buffer), len(view))
        assert count > 0
        buffer[:count] = view[:count]
        protocol.buffer_updated(count)
        view = view[count:]


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_frames_of_every_size_survive_any_split(piece: int) -> None:
    payloads = [b"", b"a", bytes(range(256)) * 10, b"L" * (3 * RECEIVE_BUFFER_BYTES + 5),
                b"b" * (RECEIVE_BUFFER_BYTES - 4), b"c" * (RECEIVE_BUFFER_BYTES - 3), b"z"]
    protocol = _FrameProtocol()
    deliver(protocol, b"".join(frame(p) for p in payloads), piece)
    received = []
    while (got := protocol.next_frame()) is not None:
        received.append(bytes(got))
    assert received == payloads


def test_a_large_frame_is_received_into_its_own_buffer() -> None:
    protocol = _FrameProtocol()
    payload = bytes(range(256)) * 1024
    data = frame(payload)
    deliver(protocol, data[:1000], 1000)
    assert protocol.next_frame() is None
    buffer = protocol.get_buffer(-1)
    assert len(buffer) == len(payload) - 996  # exactly the rest of the frame
    deliver(protocol, data[1000:], len(data))
    received = protocol.next_frame()
    assert received is not None and received == payload


def test_a_waiting_read_gets_the_frame_or_the_lost_connection() -> None:
    async def scenario() -> None:
        protocol = _FrameProtocol()
        waiting = asyncio.ensure_future(protocol.wait_frame())
        await asyncio.sleep(0)
        deliver(protocol, frame(b"answer"), 3)
        assert bytes(await waiting) == b"answer"
        waiting = asyncio.ensure_future(protocol.wait_frame())
        await asyncio.sleep(0)
        protocol.connection_lost(None)
        with pytest.raises(ConnectionError):
            await waiting
        with pytest.raises(ConnectionError):
            protocol.next_frame()  # and every later read

    asyncio.run(scenario())


def test_a_negative_size_breaks_the_stream() -> None:
    protocol = _FrameProtocol()
    deliver(protocol, struct.pack(">i", -5) + b"xxxx", 100)
    with pytest.raises(ConnectionError):
        protocol.next_frame()


def test_a_large_frame_buffer_is_reused_only_once_nothing_refers_to_it() -> None:
    protocol = _FrameProtocol()
    first, second, third = (bytes([n]) * (2 * RECEIVE_BUFFER_BYTES) for n in (1, 2, 3))
    deliver(protocol, frame(first), 1 << 20)
    held = protocol.next_frame()
    assert held is not None
    records = held[100:200]  # a decoded answer's records: a slice of the frame
    del held
    deliver(protocol, frame(second), 1 << 20)
    assert bytes(records) == first[100:200]  # not overwritten by the second frame
    received = protocol.next_frame()
    assert received is not None and received == second
    address = id(received.obj)
    del received, records
    deliver(protocol, frame(third[:-10]), 1 << 20)  # smaller: the same buffer serves
    received = protocol.next_frame()
    assert received is not None and received == third[:-10]
    assert id(received.obj) == address
