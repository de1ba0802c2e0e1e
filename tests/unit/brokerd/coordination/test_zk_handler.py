"""poll_select keeps select.select's contract (ready objects of each list, timeout)."""

import socket
import struct
import time

from brokerd.coordination.zk_handler import BufferedSocket, PollingHandler, poll_select


def test_reports_readable_and_writable_objects_as_given() -> None:
    left, right = socket.socketpair()
    try:
        assert poll_select([left], [], [], 0) == ([], [], [])  # nothing to read yet
        assert poll_select([], [left], [], 0) == ([], [left], [])
        right.send(b"x")
        assert poll_select([left, right], [left], [], 1) == ([left], [left], [])
        assert poll_select([left.fileno()], [], [], 1) == ([left.fileno()], [], [])
    finally:
        left.close()
        right.close()


def test_a_hang_up_reads_as_readable_and_a_timeout_as_nothing() -> None:
    left, right = socket.socketpair()
    try:
        started = time.monotonic()
        assert PollingHandler().select([left], [], [], 0.05) == ([], [], [])
        assert time.monotonic() - started >= 0.04
        right.close()
        assert poll_select([left], [], [], 1) == ([left], [], [])  # the next recv sees EOF
    finally:
        left.close()


def test_a_negative_timeout_polls_once_instead_of_waiting_forever() -> None:
    left, right = socket.socketpair()
    try:
        assert poll_select([left], [], [], -1.0) == ([], [], [])
    finally:
        left.close()
        right.close()


def test_a_buffered_socket_serves_small_reads_from_one_kernel_read() -> None:
    left, right = socket.socketpair()
    buffered = BufferedSocket(left)
    try:
        right.sendall(b"\x00\x00\x00\x03abc" + b"\x00\x00\x00\x02de")
        time.sleep(0.05)
        assert buffered.recv(4) == b"\x00\x00\x00\x03"
        assert buffered.pending() == 9  # the rest came with that one read
        # kazoo selects before reading only while nothing is pending: the buffered bytes
        # must count as readable though the kernel has none left.
        assert poll_select([buffered], [], [], None) == ([buffered], [], [])
        assert [buffered.recv(3), buffered.recv(4), buffered.recv(10)] == [
            b"abc", b"\x00\x00\x00\x02", b"de"]
        assert buffered.pending() == 0
        assert poll_select([buffered], [], [], 0) == ([], [], [])
        right.close()
        assert buffered.recv(4) == b""  # end of stream, as socket.recv
    finally:
        buffered.close()  # the socket's own


def test_the_handler_connects_through_buffered_sockets() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        connection = PollingHandler().create_connection(server.getsockname(), timeout=1.0)
        try:
            assert isinstance(connection, BufferedSocket)
            accepted, _ = server.accept()
            accepted.sendall(b"zk")
            accepted.close()
            assert PollingHandler().select([connection], [], [], 1.0)[0] == [connection]
            assert connection.recv(1) == b"z" and connection.pending() == 1
        finally:
            connection.close()
    finally:
        server.close()


def test_only_a_wholly_buffered_message_with_the_wanted_xid_is_taken() -> None:
    """The state watch takes notifications (xid -1) straight from the buffer; anything
    else, or a message whose tail has not arrived, stays for kazoo's own reads."""
    def message(xid: int, body: bytes) -> bytes:
        payload = struct.pack(">iqi", xid, 7, 0) + body
        return struct.pack(">i", len(payload)) + payload

    left, right = socket.socketpair()
    buffered = BufferedSocket(left)
    try:
        first, second, answer = message(-1, b"one"), message(-1, b"two"), message(5, b"r")
        tail = message(-1, b"late")
        right.sendall(first + second + answer + tail[:6])
        time.sleep(0.05)
        assert buffered.take_buffered_message(-1) is None  # nothing read from the kernel yet
        assert buffered.recv(4) == first[:4] and buffered.recv(19) == first[4:]
        assert buffered.take_buffered_message(-1) == second[4:]
        assert buffered.take_buffered_message(-1) is None  # an answer comes next
        assert buffered.take_buffered_message(5) == answer[4:]
        assert buffered.take_buffered_message(-1) is None  # only part of it is here
        assert buffered.pending() == 6 and buffered.recv(6) == tail[:6]
    finally:
        buffered.close()
