"""What a follower's receive costs per MB, and what ``os.splice`` would save:
``python -m bench.follower_receive [--megabytes 2048] [--rounds 3]``.

Why: sampled in session 58 (bench/README), five sixths of a follower's CPU in the acks=all
RF 3 phase is the kernel copying bytes: the fetch response read from the socket into
user memory, then written into the page cache.  Splicing socket → pipe → file skips the
copy into user memory.  Before building that into the follower (which must still read
the batch headers and check CRCs), this measures the most it could save.

A sender process ``sendfile``s a 1 MiB file region over loopback again and again, as a
leader answers a follower's fetch.  The receiver, in its own process, either reads each
megabyte into a buffer and ``pwrite``s it to a file (``copy``: the follower's path today)
or splices it through a pipe into the file (``splice``).  The file is rewritten in place
within 64 MiB, so its pages are warm, as in ``bench.replication_cpu``'s cgroup.  Each
mode prints one JSON line per round: MB/s and the CPU (user + system, from ``rusage``) of
the receiver and of the sender per MB.  On loopback the kernel does much of the receiving
side's TCP work inside the sender's call, so both columns matter.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing
import os
import resource
import socket
import statistics
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path

CHUNK = 1024 * 1024
FILE_WINDOW = 64 * CHUNK  # rewritten in place: warm pages
PIPE_SIZE = CHUNK
MB = 10**6


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _receive_copying(sock: socket.socket, fd: int, total: int) -> None:
    buffer = memoryview(bytearray(CHUNK))
    received = position = filled = 0
    while received < total:
        count = sock.recv_into(buffer[filled:])
        if count == 0:
            raise ConnectionError("sender closed early")
        filled += count
        received += count
        if filled == CHUNK:
            os.pwrite(fd, buffer, position)
            position = (position + CHUNK) % FILE_WINDOW
            filled = 0


def _receive_splicing(sock: socket.socket, fd: int, total: int) -> None:
    pipe_out, pipe_in = os.pipe()
    fcntl.fcntl(pipe_in, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    received = position = 0
    try:
        while received < total:
            count = os.splice(sock.fileno(), pipe_in, min(PIPE_SIZE, total - received))
            if count == 0:
                raise ConnectionError("sender closed early")
            received += count
            while count:
                moved = os.splice(pipe_out, fd, count, offset_dst=position)
                count -= moved
                position = (position + moved) % FILE_WINDOW
    finally:
        os.close(pipe_out)
        os.close(pipe_in)


def _receiver(listener: socket.socket, mode: str, total: int, directory: str,
              results: Connection) -> None:
    sock, _ = listener.accept()
    fd = os.open(Path(directory) / f"received-{mode}", os.O_RDWR | os.O_CREAT)
    try:
        started = _cpu_seconds()
        (_receive_splicing if mode == "splice" else _receive_copying)(sock, fd, total)
        results.send(_cpu_seconds() - started)
    finally:
        os.close(fd)
        sock.close()


def _sender(port: int, source: str, total: int, results: Connection) -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    fd = os.open(source, os.O_RDONLY)
    try:
        started = _cpu_seconds()
        for _ in range(total // CHUNK):
            sent = 0
            while sent < CHUNK:
                sent += os.sendfile(sock.fileno(), fd, sent, CHUNK - sent)
        results.send(_cpu_seconds() - started)
    finally:
        os.close(fd)
        sock.close()


def measure(mode: str, megabytes: int, directory: str) -> dict[str, float]:
    """One round of ``megabytes`` MiB received in ``mode`` ("copy" or "splice")."""
    total = megabytes * CHUNK
    source = Path(directory) / "source"
    if not source.exists():
        source.write_bytes(os.urandom(CHUNK))
    listener = socket.create_server(("127.0.0.1", 0))
    context = multiprocessing.get_context("fork")
    receiver_end, receiver_result = context.Pipe(duplex=False)
    sender_end, sender_result = context.Pipe(duplex=False)
    receiver = context.Process(target=_receiver,
                               args=(listener, mode, total, directory, receiver_result))
    sender = context.Process(target=_sender, args=(listener.getsockname()[1], str(source),
                                                   total, sender_result))
    started = os.times().elapsed
    receiver.start()
    sender.start()
    receiver_cpu, sender_cpu = receiver_end.recv(), sender_end.recv()
    elapsed = os.times().elapsed - started
    for process in (sender, receiver):
        process.join(30)
    listener.close()
    return {"mode": mode, "MB/s": round(total / MB / elapsed, 1),
            "receiver CPU ms/MB": round(receiver_cpu * 1000 / (total / MB), 3),
            "sender CPU ms/MB": round(sender_cpu * 1000 / (total / MB), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=2048, help="MiB per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[dict[str, float]]] = {"copy": [], "splice": []}
    with tempfile.TemporaryDirectory(prefix="follower-receive-") as directory:
        for _ in range(args.rounds):
            for mode in rows:  # alternating, so both see the same machine
                rows[mode].append(measure(mode, args.megabytes, directory))
                print(json.dumps(rows[mode][-1]), flush=True)
    print(json.dumps({mode: {key: statistics.median(float(r[key]) for r in found)
                             for key in ("MB/s", "receiver CPU ms/MB", "sender CPU ms/MB")}
                      for mode, found in rows.items()}))


if __name__ == "__main__":
    main()
