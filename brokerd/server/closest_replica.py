"""Fetch's side of KIP-392: which hosted partition serves a fetch, and the leader's
``preferred_read_replica`` answer for a consumer in another rack.

* A consumer's Fetch v11+ may be served by a follower (as in Kafka: ``fetchOnlyFromLeader``
  is true only for replicas and for consumers that send no client metadata); the follower
  reads up to its own high watermark.  Older fetches and replicas' fetches go to the leader.
* The leader, with ``replica.selector.class`` = RackAwareReplicaSelector, points a consumer
  whose ``rack_id`` names another rack at the best in-sync follower of that rack (the rule
  is :mod:`brokerd.replication.replica_selector`): a follower in the ISR, whose log end
  offset has reached the fetch offset, registered with an endpoint on the listener the
  consumer came in on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerd.protocol import ErrorCode
from brokerd.replication.partition import NO_LEADER
from brokerd.replication.replica_selector import (
    FETCH_FROM_FOLLOWER_VERSION,
    ReplicaView,
    preferred_read_replica,
)

if TYPE_CHECKING:
    from brokerd.replication.partition import Partition
    from brokerd.server.context import HandlerContext

NO_PREFERRED_REPLICA = -1


def serving_partition(broker: HandlerContext, topic: str, partition: int, replica_id: int,
                      version: int, current_leader_epoch: int = -1
                      ) -> tuple[Partition | None, ErrorCode]:
    """The hosted partition that serves this fetch, or why none does here.  The leader
    is looked up first, for everyone: that lookup applies a delivered state the
    reconciler has not reached yet (``leader_partition``), so a consumer does not read
    from a replica whose new role is on its way."""
    led, error = broker.leader_partition(topic, partition, current_leader_epoch)
    if led is None and replica_id < 0 and version >= FETCH_FROM_FOLLOWER_VERSION:
        hosted = broker.replicas.get(topic, partition)
        if hosted is not None and hosted.leader_id != NO_LEADER:
            return hosted, ErrorCode.NONE
    return led, error


def preferred_replica(broker: HandlerContext, hosted: Partition, fetch_offset: int,
                      client_rack: str | None, listener: str) -> int:
    """The leader's redirect for a consumer (NO_PREFERRED_REPLICA: read here)."""
    if not client_rack or not hosted.is_leader:
        return NO_PREFERRED_REPLICA
    selector = broker.config.replica_selector_class
    if selector is None:
        return NO_PREFERRED_REPLICA
    registrations = broker.cache.brokers
    leader = ReplicaView(hosted.broker_id, broker.config.rack, hosted.log_end_offset,
                         broker.replicas.now_ms())
    followers = []
    for replica_id in hosted.isr:
        state = hosted.followers.get(replica_id)
        registration = registrations.get(replica_id)
        if (replica_id == hosted.broker_id or state is None or registration is None
                or state.log_end_offset < fetch_offset
                or registration.endpoint(listener) is None):
            continue
        followers.append(ReplicaView(replica_id, registration.rack, state.log_end_offset,
                                     state.last_caught_up_ms))
    chosen = preferred_read_replica(selector, client_rack, leader, followers)
    return NO_PREFERRED_REPLICA if chosen is None else chosen
