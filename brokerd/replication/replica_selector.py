"""Fetch from the closest replica (KIP-392): which replica a consumer should read from.

``replica.selector.class`` names the rule.  Unset (Kafka's default) or ``LeaderSelector``:
always the leader.  ``RackAwareReplicaSelector``: a consumer that sends its ``client.rack``
(Fetch v11+ ``rack_id``) is pointed at a replica in its own rack — the leader when the
leader is there, else the most caught-up in-sync follower there (largest log end offset,
then the most recently caught up), else the leader.  The leader answers such a fetch with
``preferred_read_replica`` and no records; the consumer then fetches from that follower,
which serves consumers up to its own high watermark.

Candidates are filtered by the caller as Kafka does: in the ISR, holding the fetch offset,
and reachable on the consumer's listener.  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_ONLY = "org.apache.kafka.common.replica.LeaderSelector"
# Kafka's class names, and their short forms for convenience.
_KNOWN = {RACK_AWARE: RACK_AWARE, "RackAwareReplicaSelector": RACK_AWARE,
          LEADER_ONLY: LEADER_ONLY, "LeaderSelector": LEADER_ONLY}
# Consumers may fetch from followers from Fetch v11 on (the version that carries rack_id
# and preferred_read_replica); older fetches must go to the leader.
FETCH_FROM_FOLLOWER_VERSION = 11


def canonical_selector(name: str | None) -> str | None:
    """The selector's full class name (None: leader only); ValueError if unknown."""
    if not name:
        return None
    try:
        return _KNOWN[name]
    except KeyError:
        raise ValueError(f"replica.selector.class {name!r} is not one of "
                         f"{sorted(set(_KNOWN.values()))}") from None


@dataclass(frozen=True)
class ReplicaView:
    """What the leader knows of one replica when choosing."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    last_caught_up_ms: int


def preferred_read_replica(selector: str | None, client_rack: str | None, leader: ReplicaView,
                           followers: Iterable[ReplicaView]) -> int | None:
    """The follower the consumer should fetch from, or None to keep reading the leader."""
    if selector != RACK_AWARE or not client_rack or leader.rack == client_rack:
        return None
    same_rack = [replica for replica in followers if replica.rack == client_rack]
    if not same_rack:
        return None
    best = max(same_rack, key=lambda r: (r.log_end_offset, r.last_caught_up_ms, -r.broker_id))
    return best.broker_id
