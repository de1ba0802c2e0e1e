"""FindCoordinator (10) v0-6: which broker coordinates a consumer group (key type 0) or a
transactional id (key type 1).

A group's coordinator is the leader of ``__consumer_offsets`` partition
``partition_for(group_id)`` (see ``brokerd.groups.hashing``); a transactional id's is the
leader of ``__transaction_state`` partition ``partition_for(transactional_id)`` (same
hash, that topic's partition count).  The first request creates the internal topic
(offsets: ``offsets.topic.num.partitions`` x ``offsets.topic.replication.factor``;
transactions: see ``txn_service.ensure_state_topic``; both compacted) and waits briefly
for its leaders; a broker naming itself first lets its coordinator hear that it leads
(the reconciler applies a large topic a slice at a time).  Whenever no live leader can be
named the answer is COORDINATOR_NOT_AVAILABLE, which every client retries.  v4+ batches
keys (KIP-699); v0-3 carry one key and answer at the top level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerd.groups.partition_log import OFFSETS_TOPIC, OFFSETS_TOPIC_CONFIGS
from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server import topic_admin
from brokerd.server.tenancy import ApiNames, Gate, Names
from brokerd.server.tenancy_rules import GROUP_DENIED, GROUP_KEY, TRANSACTION_KEY, TXN_DENIED, no_coordinator
from brokerd.server.txn_service import ensure_state_topic
from brokerd.transactions import TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.FIND_COORDINATOR
MIN_VERSION, MAX_VERSION = 0, 6
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("key",), Rt.GROUP),
             Names(("coordinator_keys",), Rt.GROUP, Op.DESCRIBE, GROUP_DENIED,
                   lambda body: body.get("key_type", GROUP_KEY) == GROUP_KEY),
             Names(("coordinator_keys",), Rt.TRANSACTIONAL_ID, Op.DESCRIBE, TXN_DENIED,
                   lambda body: body.get("key_type") == TRANSACTION_KEY)),
    response=(Names(("coordinators", "key"), Rt.GROUP),),
    gates=(Gate(Rt.GROUP, Op.DESCRIBE, GROUP_DENIED, no_coordinator, ("key",),
                lambda body, version: version < 4 and body.get("key_type", 0) == GROUP_KEY),
           Gate(Rt.TRANSACTIONAL_ID, Op.DESCRIBE, TXN_DENIED, no_coordinator, ("key",),
                lambda body, version: version < 4 and body.get("key_type") == 1)))
GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1
# Long enough for a fresh topic's 50 leaders on a loaded test machine, short enough that the
# client's own request timeout (30 s or more in every client) never fires first.
CREATE_WAIT_S = 10.0


def _answer(key: str, error: ErrorCode, message: str | None = None,
            node: tuple[int, str, int] = (-1, "", -1)) -> bodies.FindCoordinatorResponseCoordinator:
    node_id, host, port = node
    return {"key": key, "node_id": node_id, "host": host, "port": port,
            "error_code": int(error), "error_message": message}


async def _ensure_offsets_topic(broker: HandlerContext) -> str | None:
    """Create ``__consumer_offsets`` if missing; None once it exists, else why not."""
    if broker.cache.topic(OFFSETS_TOPIC) is not None:
        return None
    result, _ = await topic_admin.create_topic(
        broker, OFFSETS_TOPIC, broker.groups.config.num_partitions,
        broker.config.offsets_topic_replication_factor, configs=dict(OFFSETS_TOPIC_CONFIGS),
        timeout_s=CREATE_WAIT_S)
    if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS:  # a concurrent request created it
        await broker.cache.wait_until(lambda: broker.cache.has_leaders(OFFSETS_TOPIC),
                                      CREATE_WAIT_S)
        return None
    return None if result.ok else f"cannot create {OFFSETS_TOPIC}: {result.error_message}"


async def _find(broker: HandlerContext, request: Request[bodies.FindCoordinatorRequest], key: str,
                key_type: int) -> bodies.FindCoordinatorResponseCoordinator:
    if key_type == TRANSACTION_KEY_TYPE:
        problem = await ensure_state_topic(broker)
        topic = TRANSACTION_STATE_TOPIC
        partition = broker.transactions.coordinator.partition_for(key)
    elif key_type == GROUP_KEY_TYPE:
        problem = await _ensure_offsets_topic(broker)
        topic, partition = OFFSETS_TOPIC, broker.groups.partition_for(key)
    else:
        return _answer(key, ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}")
    if problem is not None:
        return _answer(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, problem)
    metadata = broker.cache.topic(topic)
    state = None if metadata is None else metadata.states.get(partition)
    registration = None if state is None else broker.cache.brokers.get(state.leader)
    if state is None or registration is None:
        return _answer(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{topic} partition has no leader")
    if state.leader == broker.config.broker_id:
        # The cache knows the leaders before a large topic's replicas are all applied;
        # answered at once, the client's next request would meet NOT_COORDINATOR here.
        await broker.reconciler.applied(topic, CREATE_WAIT_S)
    endpoint = registration.endpoint(request.connection.listener_name)
    if endpoint is None:
        return _answer(key, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       f"coordinator has no {request.connection.listener_name} listener")
    return _answer(key, ErrorCode.NONE, None, (state.leader, *endpoint))


async def handle(broker: HandlerContext, request: Request[bodies.FindCoordinatorRequest]
                 ) -> bodies.FindCoordinatorResponse:
    body = request.body
    key_type = body.get("key_type", GROUP_KEY_TYPE)
    if request.version >= 4:
        coordinators = [await _find(broker, request, key, key_type)
                        for key in body["coordinator_keys"]]
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    answer = await _find(broker, request, body["key"], key_type)
    # before v4 the one answer is the body itself, which has no key field
    return {"throttle_time_ms": 0, "error_code": answer["error_code"],
            "error_message": answer["error_message"], "node_id": answer["node_id"],
            "host": answer["host"], "port": answer["port"]}
