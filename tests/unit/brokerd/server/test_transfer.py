"""ResponseWriter: bytes and file regions reach a real socket intact in both modes.

A 4 MiB region is far above the socket buffer, so sendfile hits EAGAIN and the writer must
fall back, wait for the drain and resume without losing or reordering a byte.  Over TCP
the writer corks the socket around a large response and must uncork it afterwards.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
import uvloop

from brokerd.server.transfer import RegionList, ResponseWriter, iter_pieces
from brokerd.storage import FileRegion


class _Forwarder(asyncio.Protocol):
    def __init__(self) -> None:
        self.writer: ResponseWriter | None = None

    def pause_writing(self) -> None:
        assert self.writer is not None
        self.writer.pause_writing()

    def resume_writing(self) -> None:
        assert self.writer is not None
        self.writer.resume_writing()


def _tcp_pair() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        theirs = socket.create_connection(server.getsockname())
        ours, _ = server.accept()
    return ours, theirs


def _drain_socket(sock: socket.socket, out: bytearray, expected: int) -> None:
    while len(out) < expected:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return
        out += chunk


@pytest.mark.parametrize("pair", [socket.socketpair, _tcp_pair], ids=["unix", "tcp"])
@pytest.mark.parametrize("run", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
@pytest.mark.parametrize("mode", ["sendfile", "pread"])
def test_regions_and_bytes_arrive_in_order(tmp_path: Path, mode: str, run: Any,
                                           pair: Any) -> None:
    content = os.urandom(4 << 20)
    path = tmp_path / "segment.log"
    path.write_bytes(content)
    ours, theirs = pair()
    corked_after: list[int] = []
    received = bytearray()
    expected = 3 + (len(content) - 100) + 3 + 1000 + 2
    reader = threading.Thread(target=_drain_socket, args=(theirs, received, expected))
    reader.start()

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        protocol = _Forwarder()
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, ours)
        writer = ResponseWriter(transport, mode)  # type: ignore[arg-type]
        protocol.writer = writer
        with path.open("rb") as file:
            regions = RegionList([FileRegion(file.fileno(), 100, len(content) - 200),
                                  FileRegion(file.fileno(), len(content) - 100, 100)])
            await writer.write([b"abc", regions, b"def", FileRegion(file.fileno(), 0, 1000), b"gh"])
            await writer.drained()
        if ours.family == socket.AF_INET:
            corked_after.append(ours.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK))
        transport.close()

    run(scenario())
    reader.join(10)
    theirs.close()
    assert bytes(received) == b"abc" + content[100:] + b"def" + content[:1000] + b"gh"
    assert corked_after in ([], [0])  # a corked socket would hold the tail back 200 ms


def test_region_list_sums_sizes_and_is_expanded(tmp_path: Path) -> None:
    with (tmp_path / "f").open("w+b") as file:
        first, second, alone = (FileRegion(file.fileno(), 0, 5), FileRegion(file.fileno(), 5, 7),
                                FileRegion(file.fileno(), 0, 1))
        listed = RegionList([first, second])
        assert listed.nbytes == 12
        assert list(iter_pieces([b"a", listed, alone])) == [b"a", first, second, alone]


@pytest.mark.parametrize("mode", ["sendfile", "pread"])
def test_a_small_response_is_copied_whole_and_pads_a_truncated_region(tmp_path: Path,
                                                                      mode: str) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"0123456789")
    ours, theirs = socket.socketpair()
    received = bytearray()
    expected = 2 + 4 + 12 + 1
    reader = threading.Thread(target=_drain_socket, args=(theirs, received, expected))
    reader.start()

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(_Forwarder, ours)
        writer = ResponseWriter(transport, mode)  # type: ignore[arg-type]
        with path.open("rb") as file:  # the second region runs 4 bytes past the file's end
            await writer.write([b"ab", FileRegion(file.fileno(), 2, 4), b"",
                                RegionList([FileRegion(file.fileno(), 2, 12)]), b"z"])
        transport.close()

    asyncio.run(scenario())
    reader.join(10)
    theirs.close()
    assert bytes(received) == b"ab" + b"2345" + b"23456789" + bytes(4) + b"z"


def test_the_cork_socket_is_made_once_and_closed_with_the_connection(tmp_path: Path) -> None:
    """Two large responses over TCP (uvloop, as brokers run): one descriptor of the writer's
    own sets the cork for both, and it is closed when the connection is lost, while the
    transport's descriptor is the transport's to close."""
    content = os.urandom(256 * 1024)
    path = tmp_path / "segment.log"
    path.write_bytes(content)
    ours, theirs = _tcp_pair()
    received = bytearray()
    reader = threading.Thread(target=_drain_socket, args=(theirs, received, 2 * len(content)))
    reader.start()
    cork_descriptors: list[int] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        protocol = _Forwarder()
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, ours)
        writer = protocol.writer = ResponseWriter(transport, "sendfile")  # type: ignore[arg-type]
        with path.open("rb") as file:
            for _ in range(2):
                await writer.write([FileRegion(file.fileno(), 0, len(content))])
                assert writer._cork_socket is not None
                cork_descriptors.append(writer._cork_socket.fileno())
            await writer.drained()
        writer.connection_lost()
        assert writer._cork_socket is None
        with pytest.raises(OSError):
            os.fstat(cork_descriptors[0])  # closed
        os.fstat(ours.fileno())  # still open: the transport's
        transport.close()

    uvloop.run(scenario())
    reader.join(10)
    theirs.close()
    assert bytes(received) == content * 2
    assert len(set(cork_descriptors)) == 1 and cork_descriptors[0] != ours.fileno()
