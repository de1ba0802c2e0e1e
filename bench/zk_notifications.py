"""What a burst of partition-state notifications costs a broker's ZooKeeper connection
thread, with its sockets read through a buffer (:class:`~brokerd.coordination.zk_handler.
BufferedSocket`, what brokers use) and without, while another thread of the process keeps
the GIL busy (as a broker's event loop does in a failover), at the broker's GIL switch
interval (1 ms, ``brokerd/__main__.py``).

A failover at 30,000 partitions changes every state node once or twice, and each change
reaches every broker through its persistent recursive watch
(:mod:`brokerd.coordination.state_watch`).  Here another process rewrites ``--nodes``
nodes (pipelined transactions of 100, as the controller writes) under a watched path;
printed per case, rounds alternating: the watcher's wall time from the first write to
the last notification, and the CPU time of kazoo's connection thread over it::

    .venv/bin/python -m bench.zk_notifications --nodes 30000 --rounds 3
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import threading
import time
from pathlib import Path

from kazoo.client import KazooClient

from bench.measure import CLOCK_TICKS_PER_SECOND, cpu_ticks_from_stat
from bench.zk_reads import STATE, busy_loop, print_medians
from brokerd.coordination.state_watch import StateWatch
from brokerd.coordination.zk_handler import PollingHandler
from tests.support.services import start_zookeeper


class UnbufferedHandler(PollingHandler):
    """The broker's handler before buffered sockets: kazoo's own connections."""

    def create_connection(self, *args: object, **kwargs: object) -> object:
        return super(PollingHandler, self).create_connection(*args, **kwargs)


SWITCH_INTERVAL_S = 0.001  # the broker's (brokerd/__main__.py)
HANDLERS = {"buffered": PollingHandler, "unbuffered": UnbufferedHandler}


def rewrite(address: str, nodes: int) -> None:
    """Set every node once, 100 per transaction, all transactions in flight at once."""
    writer = KazooClient(hosts=address)
    writer.start()
    pending = []
    for start in range(0, nodes, 100):
        transaction = writer.transaction()
        for i in range(start, min(start + 100, nodes)):
            transaction.set_data(f"/brokers/topics/t/partitions/{i}/state", STATE)
        pending.append(transaction.commit_async())
    for result in pending:
        result.get()
    writer.stop()
    writer.close()


def create_states(address: str, nodes: int) -> None:
    """The state nodes of topic ``t`` in the broker's layout, created once."""
    setup = KazooClient(hosts=address)
    setup.start()
    setup.ensure_path("/brokers/topics/t/partitions")
    for start in range(0, nodes, 500):
        transaction = setup.transaction()
        for i in range(start, min(start + 500, nodes)):
            transaction.create(f"/brokers/topics/t/partitions/{i}")
            transaction.create(f"/brokers/topics/t/partitions/{i}/state", STATE)
        transaction.commit()
    setup.stop()
    setup.close()


def thread_cpu_s(name_part: str) -> float:
    """CPU seconds of this process's thread whose name contains ``name_part``."""
    thread = next(t for t in threading.enumerate() if name_part in t.name)
    stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
    return cpu_ticks_from_stat(stat) / CLOCK_TICKS_PER_SECOND


def one_round(address: str, handler: type[PollingHandler], nodes: int) -> tuple[float, float]:
    notified = threading.Semaphore(0)
    client = KazooClient(hosts=address, handler=handler())
    client.start()
    try:
        watch = StateWatch(client, lambda topic, partition, changed: notified.release())
        watch.add()
        cpu_before = thread_cpu_s("zk_loop")
        writer = multiprocessing.get_context("spawn").Process(target=rewrite,
                                                              args=(address, nodes))
        started = time.monotonic()
        writer.start()
        for _ in range(nodes):
            if not notified.acquire(timeout=120):
                raise TimeoutError("notifications stopped arriving")
        elapsed = time.monotonic() - started
        cpu = thread_cpu_s("zk_loop") - cpu_before
        writer.join()
        return elapsed, cpu
    finally:
        client.stop()
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    zookeeper = start_zookeeper()
    try:
        create_states(zookeeper.address, args.nodes)
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        stop = threading.Event()
        threading.Thread(target=busy_loop, args=(stop,), daemon=True).start()
        walls: dict[str, list[float]] = {}
        cpus: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for name, handler in HANDLERS.items():
                wall, cpu = one_round(zookeeper.address, handler, args.nodes)
                walls.setdefault(name, []).append(wall)
                cpus.setdefault(name, []).append(cpu)
        stop.set()
        print_medians(walls, f"{args.nodes} notifications, wall")
        print_medians(cpus, f"{args.nodes} notifications, connection thread CPU")
    finally:
        zookeeper.stop()


if __name__ == "__main__":
    main()
