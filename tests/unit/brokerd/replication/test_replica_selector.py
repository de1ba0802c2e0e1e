"""brokerd.replication.replica_selector: KIP-392's rack-aware choice of a read replica."""

from __future__ import annotations

import pytest

from brokerd.replication.replica_selector import (
    LEADER_ONLY,
    RACK_AWARE,
    ReplicaView,
    canonical_selector,
    preferred_read_replica,
)

LEADER = ReplicaView(1, "az-1", 100, 0)
B2 = ReplicaView(2, "az-2", 90, 5_000)
B3 = ReplicaView(3, "az-2", 100, 4_000)
B4 = ReplicaView(4, "az-3", 100, 4_000)


def test_selector_names_long_and_short() -> None:
    assert canonical_selector("RackAwareReplicaSelector") == RACK_AWARE
    assert canonical_selector(RACK_AWARE) == RACK_AWARE
    assert canonical_selector("LeaderSelector") == LEADER_ONLY
    assert canonical_selector(None) is None and canonical_selector("") is None
    with pytest.raises(ValueError, match="replica.selector.class"):
        canonical_selector("com.example.Nearest")


def test_the_most_caught_up_follower_of_the_clients_rack() -> None:
    assert preferred_read_replica(RACK_AWARE, "az-2", LEADER, [B2, B3, B4]) == 3
    assert preferred_read_replica(RACK_AWARE, "az-3", LEADER, [B2, B3, B4]) == 4


def test_equal_offsets_prefer_the_most_recently_caught_up() -> None:
    fresher = ReplicaView(5, "az-2", 100, 9_000)
    assert preferred_read_replica(RACK_AWARE, "az-2", LEADER, [B3, fresher]) == 5


@pytest.mark.parametrize("selector, rack, followers", [
    (RACK_AWARE, "az-1", [B2]),          # the leader is in the client's rack
    (RACK_AWARE, "az-9", [B2, B3]),      # nobody is
    (RACK_AWARE, "", [B2]),              # the client sent no rack
    (RACK_AWARE, None, [B2]),
    (None, "az-2", [B2]),                # no selector: leader only (Kafka's default)
    (LEADER_ONLY, "az-2", [B2]),
])
def test_otherwise_the_leader(selector: str | None, rack: str | None,
                              followers: list[ReplicaView]) -> None:
    assert preferred_read_replica(selector, rack, LEADER, followers) is None
