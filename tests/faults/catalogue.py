"""The faults, each a function of the cluster and the partitions' current leaders that
applies the fault and returns a :class:`Fault` saying how to heal it and whom it hit.

Shared by the fault tests (one fault each, with an assertion of its effect) and
``bench/chaos.py`` (a random schedule of them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.faults.cluster import FaultCluster

ZOOKEEPER = ("zk1", "zk2", "zk3")
BROKER_IDS = (1, 2, 3)


@dataclass
class Fault:
    heal: Callable[[], None]
    target: int | str  # the broker id (or ZooKeeper node) the fault hit


FaultFunction = Callable[[FaultCluster, dict[int, int]], Fault]


def leader_of(leaders: dict[int, int], partition: int = 0) -> int:
    """The partition's leader; while it has none (-1, e.g. right after an earlier fault
    in a chaos run) another partition's, else broker 1."""
    candidates = [leaders.get(partition, -1), *leaders.values(), BROKER_IDS[0]]
    return next(broker for broker in candidates if broker in BROKER_IDS)


def isolated_follower(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    follower = next(b for b in BROKER_IDS if b != leader_of(leaders))
    cluster.network.isolate(f"b{follower}")
    return Fault(cluster.network.heal, follower)


def isolated_leader(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    cluster.network.isolate(f"b{leader_of(leaders)}")
    return Fault(cluster.network.heal, leader_of(leaders))


def leader_without_zookeeper(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    cluster.network.isolate(f"b{leader_of(leaders)}", list(ZOOKEEPER))
    return Fault(cluster.network.heal, leader_of(leaders))


def brokers_split(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    alone = leader_of(leaders)
    cluster.network.isolate(f"b{alone}", [f"b{b}" for b in BROKER_IDS if b != alone])
    return Fault(cluster.network.heal, alone)


def zookeeper_leader_paused(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    paused = cluster.zookeeper_leader()
    cluster.pause(paused)
    return Fault(lambda: cluster.resume(paused), paused)


def zookeeper_follower_paused(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    leader = cluster.zookeeper_leader()
    paused = next(member for member in ZOOKEEPER if member != leader)
    cluster.pause(paused)
    return Fault(lambda: cluster.resume(paused), paused)


def zookeeper_quorum_lost(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    for member in ZOOKEEPER[1:]:
        cluster.network.isolate(member)
    return Fault(cluster.network.heal, "zk2+zk3")


def leaders_killed(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    """kill -9 of partition 0's leader and of partition 1's (when another broker); both
    restart when healed."""
    killed = sorted({leader_of(leaders), leader_of(leaders, 1)})
    for broker_id in killed:
        cluster.kill(f"b{broker_id}")

    def heal() -> None:
        for broker_id in killed:
            cluster.start_broker(broker_id)
    return Fault(heal, leader_of(leaders))


def full_disk(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    """The first of partition 0's leader's two log dirs filled to the last block: that
    dir goes offline, the broker serves on from the other.  Healed by freeing the space
    and restarting the broker (an offline dir comes back only at a restart)."""
    ballast = cluster.fill_disk(cluster.log_dirs(leader_of(leaders))[0])

    def heal() -> None:
        ballast.unlink()
        if cluster.running(f"b{leader_of(leaders)}"):
            cluster.stop_broker(leader_of(leaders))
        cluster.start_broker(leader_of(leaders))
    return Fault(heal, leader_of(leaders))


def clock_stepped_forward(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    """Partition 0's leader's wall clock an hour ahead (its monotonic clock untouched)."""
    cluster.set_clock(leader_of(leaders), 3600)
    return Fault(lambda: cluster.set_clock(leader_of(leaders), 0), leader_of(leaders))


def clock_stepped_back(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    cluster.set_clock(leader_of(leaders), -3600)
    return Fault(lambda: cluster.set_clock(leader_of(leaders), 0), leader_of(leaders))


def clock_running_fast(cluster: FaultCluster, leaders: dict[int, int]) -> Fault:
    """Partition 0's leader's wall clock running 1.5 times too fast, then put right."""
    cluster.set_clock(leader_of(leaders), 0, rate=1.5)
    return Fault(lambda: cluster.set_clock(leader_of(leaders), 0), leader_of(leaders))


FAULTS: dict[str, FaultFunction] = {function.__name__.replace("_", "-"): function for function in (
    isolated_follower, isolated_leader, leader_without_zookeeper, brokers_split,
    zookeeper_leader_paused, zookeeper_follower_paused, zookeeper_quorum_lost,
    leaders_killed, full_disk, clock_stepped_forward, clock_stepped_back, clock_running_fast)}
