"""The cluster as ZooKeeper shows it: brokers, the controller, and partitions led.

Parsing is pure (``parse_*`` take znode bytes); ``read_cluster`` is the only I/O.  Formats are
Kafka's: ``/brokers/ids/<id>`` = ``{"endpoints":["PLAINTEXT://host:port",…],"rack":…,…}``
(ephemeral: present while the broker is up), ``/controller`` = ``{"brokerid":N,…}``,
``/brokers/topics/<t>`` = ``{"partitions":{"0":[1,2,3]},…}`` (the replica assignment) and
``/brokers/topics/<t>/partitions/<p>/state`` = ``{"leader":N,"isr":[…],"leader_epoch":E,…}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kazoo.client import KazooClient

from tenants.reassignment import NO_LEADER
from tenants.znodes import decode
from tenants.zookeeper import read


@dataclass
class BrokerInfo:
    broker_id: int
    up: bool
    endpoints: list[str] = field(default_factory=list)
    rack: str | None = None
    is_controller: bool = False
    partitions_led: int = 0
    replicas: int = 0  # partitions this broker holds a replica of
    under_replicated_led: int = 0  # partitions it leads whose ISR lacks a replica
    out_of_sync: int = 0  # its replicas of led partitions that are not in the ISR


@dataclass
class ClusterView:
    """Brokers (registered or named in an assignment), and partitions by health."""

    brokers: list[BrokerInfo]
    controller_id: int | None
    partitions: int = 0
    under_replicated: list[str] = field(default_factory=list)
    offline: list[str] = field(default_factory=list)
    # led by a replica other than the preferred (first) one: what a preferred election fixes
    not_preferred: list[tuple[str, int]] = field(default_factory=list)


def summarize(registrations: dict[int, bytes], controller: bytes | None,
              assignments: dict[str, bytes], states: dict[tuple[str, int], bytes | None]
              ) -> ClusterView:
    """Pure: the cluster view from znode contents.

    A partition is offline when it has no live leader, under-replicated when its ISR is smaller
    than its replica list (Kafka's definitions).  Per broker: replicas held, partitions led, and
    of those the under-replicated ones; a replica is out of sync when its partition has a live
    leader and the ISR does not name it.
    """
    controller_id = decode(controller).get("brokerid")
    brokers: dict[int, BrokerInfo] = {}
    for broker_id, data in registrations.items():
        info = decode(data)
        brokers[broker_id] = BrokerInfo(broker_id, up=True, endpoints=list(info.get("endpoints", [])),
                                        rack=info.get("rack"), is_controller=broker_id == controller_id)
    view = ClusterView(brokers=[], controller_id=controller_id)
    for topic, data in assignments.items():
        for partition, replicas in decode(data).get("partitions", {}).items():
            view.partitions += 1
            name = f"{topic}-{partition}"
            for replica in replicas:
                brokers.setdefault(replica, BrokerInfo(replica, up=False)).replicas += 1
            state = decode(states.get((topic, int(partition))))
            leader = state.get("leader", NO_LEADER)
            if leader == NO_LEADER or leader not in registrations:
                view.offline.append(name)
                continue
            brokers[leader].partitions_led += 1
            if replicas and leader != replicas[0]:
                view.not_preferred.append((topic, int(partition)))
            isr = state.get("isr", [])
            for replica in set(replicas) - set(isr):
                brokers[replica].out_of_sync += 1
            if len(isr) < len(replicas):
                view.under_replicated.append(name)
                brokers[leader].under_replicated_led += 1
    view.brokers = sorted(brokers.values(), key=lambda b: b.broker_id)
    return view


def read_cluster(zk: KazooClient) -> ClusterView:
    """Read every broker registration, the controller, and each partition's state."""
    ids = zk.get_children("/brokers/ids") if zk.exists("/brokers/ids") else []
    registrations = {int(i): read(zk, f"/brokers/ids/{i}") or b"" for i in ids}
    topics = zk.get_children("/brokers/topics") if zk.exists("/brokers/topics") else []
    assignments = {t: read(zk, f"/brokers/topics/{t}") or b"" for t in topics}
    states: dict[tuple[str, int], bytes | None] = {}
    for topic, data in assignments.items():
        for partition in decode(data).get("partitions", {}):
            states[(topic, int(partition))] = read(
                zk, f"/brokers/topics/{topic}/partitions/{partition}/state")
    return summarize(registrations, read(zk, "/controller"), assignments, states)
