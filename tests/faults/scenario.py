"""One fault scenario: a workload runs, a fault is applied and healed, the history is read
back and checked.

Timeline: the topic is created (RF 3, ``min.insync.replicas=2``, 4 partitions) and the
workload runs for a few seconds; the fault holds for ``fault_s``; after healing the
workload runs ``AFTER_HEAL_S`` more, then stops (outstanding deliveries awaited); the
cluster must be back in sync, every partition is read back, each replica's files are
compared, and :func:`tests.faults.checker.check` judges.  Acknowledgements from session
timeout + 10 s after healing until shortly before the stop must have been consumed by the
group (consumers progress again).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

from tests.faults.checker import Ack, Report, Stored, check
from tests.faults.cluster import SESSION_TIMEOUT_MS, FaultCluster

PARTITIONS = 4
WARM_UP_S = 2.0
AFTER_HEAL_S = 20.0
CONSUMERS_BACK_S = SESSION_TIMEOUT_MS / 1000 + 10


def events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def partition_views(cluster: FaultCluster, topic: str, out: Path
                    ) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, ISR) as the brokers the clients reach report them."""
    process = cluster.workload("leaders", topic, out, "--partitions", str(PARTITIONS))
    process.wait(30)
    lines = (out / "leaders.out").read_text().strip().splitlines()
    return {int(p): (leader, isr) for p, (leader, isr) in json.loads(lines[-1]).items()}


def exercise(cluster: FaultCluster, workdir: Path, topic: str,
             fault: Callable[[dict[int, int]], Callable[[], None]],
             fault_s: float = 10.0,
             during: Callable[[dict[int, tuple[int, list[int]]]], object] | None = None,
             ) -> Report:
    """Run the scenario; ``fault`` gets the partitions' leaders, applies the fault and
    returns how to heal it.  ``during`` (optional) asserts what the fault did, from the
    partitions' (leader, ISR) just before healing, so a fault that did nothing fails."""
    out = workdir / topic
    partitions = ("--partitions", str(PARTITIONS))
    assert cluster.run_workload("create", topic, out, *partitions) == 0, \
        (out / "create.out").read_text()
    workload = cluster.workload("run", topic, out, *partitions)
    try:
        deadline = time.monotonic() + 30
        while not (out / "started").exists():
            assert workload.poll() is None, (out / "run.out").read_text()
            assert time.monotonic() < deadline, "the workload did not start"
            time.sleep(0.2)
        time.sleep(WARM_UP_S)
        heal = fault({p: view[0] for p, view in partition_views(cluster, topic, out).items()})
        time.sleep(fault_s)
        if during is not None:
            during(partition_views(cluster, topic, out))
        heal()
        healed_at = time.time()
        time.sleep(AFTER_HEAL_S)
        stopped_at = time.time()
    finally:
        workload.send_signal(signal.SIGTERM)
        workload.wait(180)
    assert cluster.run_workload("in-sync", topic, out, *partitions, "--timeout", "60") == 0, \
        "replicas did not return to the ISR within 60 s of the workload's end"
    assert cluster.run_workload("final", topic, out, *partitions) == 0, \
        (out / "final.out").read_text()
    acks = [Ack(e["value"], e["partition"], e["offset"], e["at"])
            for e in events(out / "acks.jsonl")]
    stored = [Stored(e["partition"], e["offset"], e["value"])
              for e in events(out / "stored.jsonl")]
    consumed = [e["value"] for e in events(out / "consumed.jsonl")]
    replicas = {p: cluster.replica_batches(topic, p) for p in range(PARTITIONS)}
    report = check(acks, stored, consumed, replicas,
                   must_consume=(healed_at + CONSUMERS_BACK_S, stopped_at - 2))
    print(f"\n{topic}: {len(events(out / 'errors.jsonl'))} delivery errors\n{report.table()}")
    return report
