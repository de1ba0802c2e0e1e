"""poll_select keeps select.select's contract (ready objects of each list, timeout)."""

import socket
import time

from brokerd.coordination.zk_handler import PollingHandler, poll_select


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
