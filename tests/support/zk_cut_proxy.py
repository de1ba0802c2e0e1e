"""A loopback TCP proxy in front of ZooKeeper that cuts one connection at a chosen request,
so a test can make a ZooKeeper client meet a connection loss at an exact step.

ZooKeeper's frames are length-prefixed both ways (a 4-byte big-endian size), so the proxy
counts whole frames.  Once armed, it counts the requests on every connection (neither a
connection's handshake nor the client's pings) and cuts the connection of the
``cut_at``-th, once (0 only counts): either before forwarding it (``reply_lost=False``:
ZooKeeper never sees the request) or once ZooKeeper has answered it without relaying the
answer (``reply_lost=True``: the request took effect but the client cannot know).
Everything else, such as the client's reconnection, passes through untouched.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

from kazoo.client import KazooClient


class ZkCutProxy:
    def __init__(self, zookeeper: str) -> None:
        host, port = zookeeper.rsplit(":", 1)
        self._upstream = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self.arm(0, reply_lost=False)
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, cut_at: int, reply_lost: bool) -> None:
        """Count requests from now, and cut at the ``cut_at``-th (0: never)."""
        with self._lock:
            self.requests_seen = 0
            self._cut_at = cut_at
            self._reply_lost = reply_lost
            self.cut = threading.Event()

    def disarm(self) -> None:
        """Cut nothing more (the counting and ``cut`` go on as they are)."""
        with self._lock:
            self._cut_at = 0

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for sock in self._sockets:
            _close(sock)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._upstream)
            self._sockets += [client, server]
            cut_reply = threading.Event()
            threading.Thread(target=self._requests, args=(client, server, cut_reply),
                             daemon=True).start()
            threading.Thread(target=self._replies, args=(server, client, cut_reply),
                             daemon=True).start()

    def _counted_cut(self) -> bool:
        """Count one request; whether its connection is the one to cut."""
        with self._lock:
            self.requests_seen += 1
            return self.requests_seen == self._cut_at and not self.cut.is_set()

    def _requests(self, client: socket.socket, server: socket.socket,
                  cut_reply: threading.Event) -> None:
        handshake = True
        while (frame := _read_frame(client)) is not None:
            if not handshake and not _is_ping(frame) and self._counted_cut():
                if self._reply_lost:
                    cut_reply.set()  # the answer to this request is the last one
                    _send(server, frame)
                else:
                    self._cut(client, server)
                return
            handshake = False
            if not _send(server, frame):
                break
        _close(server)

    def _replies(self, server: socket.socket, client: socket.socket,
                 cut_reply: threading.Event) -> None:
        while (frame := _read_frame(server)) is not None:
            if cut_reply.is_set() and _is_reply(frame):
                self._cut(client, server)
                return
            if not _send(client, frame):
                break
        _close(client)

    def _cut(self, client: socket.socket, server: socket.socket) -> None:
        _close(client)
        _close(server)
        self.cut.set()


@contextlib.contextmanager
def client_through_proxy(zk_connect: str) -> Iterator[tuple[KazooClient, ZkCutProxy]]:
    """A plain kazoo client in ``zk_connect``'s chroot, connected through a cut proxy: it
    holds no watches, so the only requests the proxy counts are the caller's."""
    hosts, slash, chroot = zk_connect.partition("/")
    proxy = ZkCutProxy(hosts)
    client = KazooClient(hosts=f"{proxy.address}{slash}{chroot}", timeout=10)
    client.start(timeout=10)
    try:
        yield client, proxy
    finally:
        client.stop()
        client.close()
        proxy.close()


def _is_ping(frame: bytes) -> bool:
    """A client's keep-alive (xid -2), sent when idle: not counted, so a count of requests
    does not depend on how long a step took."""
    (xid,) = struct.unpack_from(">i", frame, 4)
    return xid == -2


def _is_reply(frame: bytes) -> bool:
    """Not a ping's answer (xid -2) nor a watch notification (xid -1)."""
    (xid,) = struct.unpack_from(">i", frame, 4)
    return xid >= 0


def _read_frame(sock: socket.socket) -> bytes | None:
    header = _read_exactly(sock, 4)
    if header is None:
        return None
    body = _read_exactly(sock, struct.unpack(">i", header)[0])
    return None if body is None else header + body


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        try:
            chunk = sock.recv(size - len(chunks))
        except OSError:
            return None
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def _send(sock: socket.socket, data: bytes) -> bool:
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
