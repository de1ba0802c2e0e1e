"""Network partitions and ZooKeeper trouble, with the workload checker's verdict: nothing
acknowledged lost or moved, no duplicates from idempotent producers, per-producer order
kept, replicas identical after healing, consumers progressing again.

Kafka's answers, which these check: a follower cut off leaves the ISR and catches up when
healed; a leader cut off from ZooKeeper keeps its followers (and so its acks) until the
controller elects another leader, then it can no longer reach the ISR it needs and stops
acknowledging; a broker split from the other two cannot be in a majority ISR; ZooKeeper
pauses and quorum loss stop metadata changes but not the data plane of existing leaders.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults.checker import Report
from tests.faults.cluster import FaultCluster
from tests.faults.scenario import exercise

pytestmark = [pytest.mark.integration, pytest.mark.serial, pytest.mark.timeout(600)]

ZOOKEEPER = ["zk1", "zk2", "zk3"]


def assert_clean(report: Report) -> None:
    assert report.clean, report.table()


def test_an_isolated_follower(fault_cluster: FaultCluster, tmp_path: Path) -> None:
    isolated: list[int] = []

    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        isolated.append(next(b for b in (1, 2, 3) if b != leaders[0]))
        fault_cluster.network.isolate(f"b{isolated[0]}")
        return fault_cluster.network.heal

    def left_every_isr(views: dict[int, tuple[int, list[int]]]) -> None:
        assert all(isolated[0] not in isr for _, isr in views.values()), views

    assert_clean(exercise(fault_cluster, tmp_path, "isolated-follower", fault,
                          during=left_every_isr))


def test_an_isolated_leader(fault_cluster: FaultCluster, tmp_path: Path) -> None:
    """Cut off from everyone (ZooKeeper, brokers and clients): its session expires and the
    controller moves its leaderships; healed, it truncates to the new leaders and rejoins."""
    isolated: list[int] = []

    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        isolated.append(leaders[0])
        fault_cluster.network.isolate(f"b{isolated[0]}")
        return fault_cluster.network.heal

    def replaced(views: dict[int, tuple[int, list[int]]]) -> None:
        assert all(leader not in (-1, isolated[0]) and isolated[0] not in isr
                   for leader, isr in views.values()), views

    assert_clean(exercise(fault_cluster, tmp_path, "isolated-leader", fault, fault_s=15.0,
                          during=replaced))


def test_a_leader_cut_off_from_zookeeper_only(fault_cluster: FaultCluster,
                                              tmp_path: Path) -> None:
    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        fault_cluster.network.isolate(f"b{leaders[0]}", ZOOKEEPER)
        return fault_cluster.network.heal

    assert_clean(exercise(fault_cluster, tmp_path, "leader-without-zk", fault,
                          fault_s=15.0))


def test_brokers_split_one_against_two(fault_cluster: FaultCluster, tmp_path: Path) -> None:
    alone: list[int] = []

    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        alone.append(leaders[0])
        fault_cluster.network.isolate(f"b{alone[0]}", [f"b{b}" for b in (1, 2, 3)
                                                      if b != alone[0]])
        return fault_cluster.network.heal

    def alone_in_the_isr_of_what_it_leads(views: dict[int, tuple[int, list[int]]]) -> None:
        # It still holds its ZooKeeper session, so it keeps leading, but no follower
        # reaches it: its ISRs shrink to itself (below min.insync.replicas: acks=all waits)
        # and the two others drop it from the ISRs they lead.
        for leader, isr in views.values():
            assert isr == [alone[0]] if leader == alone[0] else alone[0] not in isr, views

    assert_clean(exercise(fault_cluster, tmp_path, "split-brokers", fault, fault_s=15.0,
                          during=alone_in_the_isr_of_what_it_leads))


def test_the_zookeeper_leader_paused(fault_cluster: FaultCluster, tmp_path: Path) -> None:
    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        paused = fault_cluster.zookeeper_leader()
        fault_cluster.pause(paused)
        return lambda: fault_cluster.resume(paused)

    assert_clean(exercise(fault_cluster, tmp_path, "zk-leader-paused", fault))


def test_a_zookeeper_follower_paused(fault_cluster: FaultCluster, tmp_path: Path) -> None:
    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        paused = next(m for m in ZOOKEEPER if m != fault_cluster.zookeeper_leader())
        fault_cluster.pause(paused)
        return lambda: fault_cluster.resume(paused)

    assert_clean(exercise(fault_cluster, tmp_path, "zk-follower-paused", fault))


def test_leaders_killed(fault_cluster: FaultCluster, tmp_path: Path) -> None:
    """kill -9 of the leader of partition 0 and then of whichever broker leads partition 1
    (possibly the same node twice over its restart), restarted when healed."""
    killed: list[int] = []

    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        killed.append(leaders[0])
        fault_cluster.kill(f"b{leaders[0]}")
        if leaders[1] != leaders[0]:
            killed.append(leaders[1])
            fault_cluster.kill(f"b{leaders[1]}")

        def heal() -> None:
            for broker_id in killed:
                fault_cluster.start_broker(broker_id)
        return heal

    assert_clean(exercise(fault_cluster, tmp_path, "leaders-killed", fault))


def test_zookeeper_quorum_lost_for_twenty_seconds(fault_cluster: FaultCluster,
                                                  tmp_path: Path) -> None:
    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        for member in ("zk2", "zk3"):
            fault_cluster.network.isolate(member)
        return fault_cluster.network.heal

    assert_clean(exercise(fault_cluster, tmp_path, "zk-quorum-lost", fault, fault_s=20.0))


def test_a_full_disk(fault_cluster: FaultCluster, tmp_path: Path) -> None:
    """Kafka's answer (KIP-112): the write answers KAFKA_STORAGE_ERROR, the directory goes
    offline, and a broker without an online log dir halts; the others lead its partitions
    and, restarted with space freed, it recovers the directory and catches up."""
    full: list[int] = []

    def fault(leaders: dict[int, int]) -> Callable[[], None]:
        full.append(leaders[0])
        ballast = fault_cluster.fill_disk(full[0])

        def heal() -> None:
            ballast.unlink()
            fault_cluster.start_broker(full[0])
        return heal

    def halted_and_replaced(views: dict[int, tuple[int, list[int]]]) -> None:
        assert not fault_cluster.running(f"b{full[0]}")
        assert "is offline" in fault_cluster.output(f"b{full[0]}")
        assert all(leader not in (-1, full[0]) for leader, _ in views.values()), views

    assert_clean(exercise(fault_cluster, tmp_path, "full-disk", fault, fault_s=12.0,
                          during=halted_and_replaced))
