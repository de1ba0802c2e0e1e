"""ElectLeaders (43) v0-2: an admin asks for leader elections (KIP-183 preferred, KIP-460
unclean), as ``kafka-leader-election`` and ``AdminClient.elect_leaders`` do.

Kafka's rules, as its ZooKeeper-mode brokers apply them: the caller needs Alter on the
cluster (else every partition, and from v1 the whole answer, is
CLUSTER_AUTHORIZATION_FAILED; tenants never have it: leadership is the service's); only
the active controller elects, every other broker answers NOT_CONTROLLER for each
partition (clients send this request to the controller and retry on that error); no
partitions named (null) means every partition of the cluster.  Per partition:
UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED (the preferred replica leads already; for
an unclean election, the leader is alive), PREFERRED_LEADER_NOT_AVAILABLE /
ELIGIBLE_LEADERS_NOT_AVAILABLE (no replica the type allows can lead), or success once this
broker's metadata shows the new leader, within ``timeout_ms`` (else REQUEST_TIMED_OUT: the
election is written and stands, as in Kafka).  The decisions are
:func:`brokerd.coordination.election.requested_election`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from brokerd.coordination.election import Requested
from brokerd.coordination.zk import OPERATION_TIMEOUT_S
from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Body, Gate, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.ELECT_LEADERS
MIN_VERSION, MAX_VERSION = 0, 2
PREFERRED, UNCLEAN = 0, 1

Key = tuple[str, int]
Outcome = tuple[ErrorCode, str | None]


def _named(body: Mapping[str, Any]) -> list[Key] | None:
    """The partitions asked for, in order, each once; None: every partition."""
    wanted = body["topic_partitions"]
    if wanted is None:
        return None
    return list(dict.fromkeys((topic["topic"], partition)
                              for topic in wanted for partition in topic["partitions"]))


def _answer(outcomes: dict[Key, Outcome], error: ErrorCode = ErrorCode.NONE
            ) -> bodies.ElectLeadersResponse:
    by_topic: dict[str, list[bodies.ElectLeadersResponsePartitionResult]] = {}
    for (topic, partition), (code, message) in outcomes.items():
        by_topic.setdefault(topic, []).append(
            {"partition_id": partition, "error_code": int(code), "error_message": message})
    return {"throttle_time_ms": 0, "error_code": int(error),
            "replica_election_results": [{"topic": topic, "partition_result": results}
                                         for topic, results in by_topic.items()]}


def _denied(body: Body, error: ErrorCode) -> Body:
    # Kafka leaves the list empty when every partition was asked for.
    return dict(_answer({key: (error, None) for key in _named(body) or ()}, error))


TENANCY = ApiNames(
    request=(Names(("topic_partitions", "topic"), Rt.TOPIC),),
    response=(Names(("replica_election_results", "topic"), Rt.TOPIC),),
    gates=(Gate(Rt.CLUSTER, Op.ALTER, CLUSTER_DENIED, _denied),))

NOT_AVAILABLE = {
    PREFERRED: (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                "the preferred replica is not alive or not in the ISR"),
    UNCLEAN: (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no live replica can lead"),
}
NOT_NEEDED = {
    PREFERRED: "the preferred replica leads already",
    UNCLEAN: "the partition has a live leader",
}


async def handle(broker: HandlerContext, request: Request[bodies.ElectLeadersRequest]
                 ) -> bodies.ElectLeadersResponse:
    body = request.body
    election_type = body["election_type"] if request.header.api_version >= 1 else PREFERRED
    named = _named(body)

    def every() -> list[Key]:
        """What an answer without the controller's outcomes lists."""
        return named if named is not None else [
            (name, partition) for name, topic in sorted(broker.cache.topics.items())
            for partition in sorted(topic.replicas)]

    if election_type not in (PREFERRED, UNCLEAN):
        return _answer({key: (ErrorCode.INVALID_REQUEST, f"election type {election_type}")
                        for key in every()}, ErrorCode.INVALID_REQUEST)
    deadline = time.monotonic() + max(body["timeout_ms"], 0) / 1000
    assert broker.coordinator is not None
    try:
        decided = await broker.coordinator.elect_leaders(
            election_type == UNCLEAN, named,
            # The write may queue behind other ZooKeeper work: at least the usual timeout.
            timeout=max(deadline - time.monotonic(), OPERATION_TIMEOUT_S))
    except CoordinationUnavailableError as exc:
        return _answer({key: (ErrorCode.REQUEST_TIMED_OUT, str(exc)) for key in every()})
    if decided is None:
        return _answer({key: (ErrorCode.NOT_CONTROLLER, None) for key in every()})
    elected = {key: leader for key, (outcome, leader) in decided.items()
               if outcome is Requested.ELECTED}

    def led_as_decided(key: Key) -> bool:
        state = broker.cache.partition_state(*key)
        return state is not None and state.leader == elected[key]

    await broker.cache.wait_until(lambda: all(map(led_as_decided, elected)),
                                  max(deadline - time.monotonic(), 0.0))
    outcomes: dict[Key, Outcome] = {}
    for key, (outcome, _) in decided.items():
        if outcome is None:
            outcomes[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no such partition")
        elif outcome is Requested.NOT_NEEDED:
            outcomes[key] = (ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED[election_type])
        elif outcome is Requested.NOT_AVAILABLE:
            outcomes[key] = NOT_AVAILABLE[election_type]
        elif led_as_decided(key):
            outcomes[key] = (ErrorCode.NONE, None)
        else:
            outcomes[key] = (ErrorCode.REQUEST_TIMED_OUT,
                             "elected, but not yet in this broker's metadata")
    return _answer(outcomes)
