"""How long the controller's pipelined partition-state writes take through the session
that watches those nodes, and through a session of their own (``brokerd/coordination/
write_session.py``), while another thread keeps the GIL busy as a broker's event loop does
in a failover.

Each round: one client (the broker's session, the broker's handler and 1 ms GIL switch
interval) reads every node with a watch, as the topic cache does; then N state writes go
out in transactions of 100 (``brokerd.coordination.writes.BATCH``), all sent before any
answer is awaited, either through that client or through a second one.  ZooKeeper sends
each watch notification ahead of the write's answer on the watching session.  Rounds
alternate the cases; printed: seconds per round and the median::

    .venv/bin/python -m bench.zk_state_writes --nodes 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

from kazoo.client import KazooClient

from bench.zk_reads import STATE, busy_loop, create_nodes, print_medians, read_all
from brokerd.coordination.writes import BATCH
from brokerd.coordination.zk_handler import PollingHandler
from tests.support.services import start_zookeeper


def write_all(writer: KazooClient, nodes: int) -> float:
    """Seconds to set every node (any version) in pipelined transactions of BATCH."""
    started = time.monotonic()
    pending = []
    for start in range(0, nodes, BATCH):
        transaction = writer.transaction()
        for i in range(start, min(start + BATCH, nodes)):
            transaction.set_data(f"/bench/n{i}", STATE)
        pending.append(transaction.commit_async())
    for result in pending:
        result.get()
    return time.monotonic() - started


def one_round(address: str, nodes: int, separate: bool) -> float:
    watching = KazooClient(hosts=address, handler=PollingHandler())
    writer = KazooClient(hosts=address, handler=PollingHandler()) if separate else watching
    watching.start()
    if separate:
        writer.start()
    try:
        read_all(watching, nodes)  # arms a watch on every node
        return write_all(writer, nodes)
    finally:
        for client in {watching, writer}:
            client.stop()
            client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.setswitchinterval(0.001)  # the broker's (brokerd/__main__.py)
    zookeeper = start_zookeeper()
    try:
        create_nodes(zookeeper.address, args.nodes)
        stop = threading.Event()
        threading.Thread(target=busy_loop, args=(stop,), daemon=True).start()
        seconds: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for name, separate in (("through the watching session", False),
                                   ("through a write session", True)):
                seconds.setdefault(name, []).append(
                    one_round(zookeeper.address, args.nodes, separate))
        stop.set()
        print_medians(seconds, f"{args.nodes} state writes")
    finally:
        zookeeper.stop()


if __name__ == "__main__":
    main()
