"""How fast one kazoo client reads N znodes back, pipelined, with kazoo's own handler and
with :class:`~brokerd.coordination.zk_handler.PollingHandler`, at Python's default GIL
switch interval (5 ms) and at the broker's (1 ms, ``brokerd/__main__.py``), while another
thread of the process keeps the GIL busy (as a broker's event loop does in a failover).

A broker re-reads every partition state the controller changes; this is that read,
alone.  Rounds alternate the cases; printed: seconds per round and the median::

    .venv/bin/python -m bench.zk_reads --nodes 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler

from brokerd.coordination.zk_handler import PollingHandler
from tests.support.services import start_zookeeper

HANDLERS = {"kazoo": SequentialThreadingHandler, "polling": PollingHandler}
STATE = b'{"leader":1,"leader_epoch":3,"isr":[1,3]}'


def busy_loop(stop: threading.Event) -> None:
    """Pure-Python work that holds the GIL except at the interpreter's switch points."""
    while not stop.is_set():
        sum(range(10_000))


def create_nodes(address: str, nodes: int) -> None:
    """``/bench/n0`` … ``/bench/n<nodes-1>``, each holding a partition state."""
    setup = KazooClient(hosts=address)
    setup.start()
    setup.ensure_path("/bench")
    for start in range(0, nodes, 1000):
        transaction = setup.transaction()
        for i in range(start, min(start + 1000, nodes)):
            transaction.create(f"/bench/n{i}", STATE)
        transaction.commit()
    setup.stop()
    setup.close()


def read_all(client: KazooClient, nodes: int) -> None:
    """Read every node, pipelined, each with a watch (as the topic cache reads states)."""
    pending = [client.get_async(f"/bench/n{i}", watch=lambda event: None)
               for i in range(nodes)]
    for result in pending:
        result.get()


def print_medians(seconds: dict[str, list[float]], what: str) -> None:
    for name, values in seconds.items():
        print(f"{name:30} {what}: median {statistics.median(values):.2f} s  "
              f"({', '.join(f'{v:.2f}' for v in values)})")


def read_back(address: str, handler: type[SequentialThreadingHandler], nodes: int) -> float:
    client = KazooClient(hosts=address, handler=handler())
    client.start()
    try:
        started = time.monotonic()
        read_all(client, nodes)
        return time.monotonic() - started
    finally:
        client.stop()
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    zookeeper = start_zookeeper()
    try:
        create_nodes(zookeeper.address, args.nodes)
        stop = threading.Event()
        hog = threading.Thread(target=busy_loop, args=(stop,), daemon=True)
        hog.start()
        seconds: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for interval in (0.005, 0.001):
                sys.setswitchinterval(interval)
                for name, handler in HANDLERS.items():
                    seconds.setdefault(f"{name}, switch {interval * 1000:.0f} ms", []).append(
                        read_back(zookeeper.address, handler, args.nodes))
        stop.set()
        print_medians(seconds, f"{args.nodes} pipelined reads")
    finally:
        zookeeper.stop()


if __name__ == "__main__":
    main()
