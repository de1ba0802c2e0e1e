"""InitProducerId (22) v0-4: producer ids for idempotent and transactional producers.

Ids come from this broker's block (``server.producer_ids``), so they are unique across
the cluster.  A non-transactional producer that re-initialises (KIP-360 sends its old id
and epoch) simply gets a fresh id with epoch 0, as Kafka does.  A transactional id goes
to the transaction coordinator (this broker must lead its ``__transaction_state``
partition, else NOT_COORDINATOR): the id keeps its producer id and gets the next epoch,
which fences every earlier incarnation, after aborting any transaction it left open.
While ZooKeeper cannot hand out a new block the answer is COORDINATOR_NOT_AVAILABLE
(clients retry that error).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerd.coordination.zk_await import CoordinationUnavailableError
from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Gate, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED, TXN_DENIED, no_producer_id
from brokerd.server.txn_service import client_error

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.INIT_PRODUCER_ID
MIN_VERSION, MAX_VERSION = 0, 4
PRODUCER_FENCED_SINCE = 4  # KIP-588
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(Names(("transactional_id",), Rt.TRANSACTIONAL_ID),),
    gates=(Gate(Rt.TRANSACTIONAL_ID, Op.WRITE, TXN_DENIED, no_producer_id,
                ("transactional_id",)),
           Gate(Rt.CLUSTER, Op.IDEMPOTENT_WRITE, CLUSTER_DENIED, no_producer_id,
                only_if=lambda body, version: body["transactional_id"] is None)))


async def handle(broker: HandlerContext, request: Request[bodies.InitProducerIdRequest]
                 ) -> bodies.InitProducerIdResponse:
    unavailable: bodies.InitProducerIdResponse = {
        "throttle_time_ms": 0, "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
        "producer_id": -1, "producer_epoch": -1}
    body = request.body
    if body["transactional_id"] is not None:
        try:
            error, producer_id, epoch = await broker.transactions.coordinator.init_producer_id(
                body["transactional_id"], body["transaction_timeout_ms"],
                (body.get("producer_id", -1), body.get("producer_epoch", -1)))
        except CoordinationUnavailableError:
            return unavailable
        error = client_error(error, request.version, PRODUCER_FENCED_SINCE)
        return {"throttle_time_ms": 0, "error_code": int(error), "producer_id": producer_id,
                "producer_epoch": epoch}
    try:
        producer_id = await broker.producer_ids.next_id()
    except CoordinationUnavailableError:
        return unavailable  # retriable: the client asks again
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": producer_id,
            "producer_epoch": 0}
