"""EndTxn (26) v0-4: commit or abort the producer's transaction.

Answered once the coordinator has durably recorded PrepareCommit/PrepareAbort; the
markers follow in the background (see :mod:`brokerd.transactions.coordinator`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Gate, Names
from brokerd.server.tenancy_rules import TXN_DENIED, error_only
from brokerd.server.txn_service import client_error

if TYPE_CHECKING:
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.END_TXN
MIN_VERSION, MAX_VERSION = 0, 4
PRODUCER_FENCED_SINCE = 2  # KIP-588
TENANCY = ApiNames(
    request=(Names(("transactional_id",), Rt.TRANSACTIONAL_ID),),
    gates=(Gate(Rt.TRANSACTIONAL_ID, Op.WRITE, TXN_DENIED, error_only, ("transactional_id",)),))


async def handle(broker: HandlerContext, request: Request) -> dict[str, Any]:
    body = request.body
    error = await broker.transactions.coordinator.end_txn(
        body["transactional_id"], body["producer_id"], body["producer_epoch"],
        body["committed"])
    return {"throttle_time_ms": 0,
            "error_code": int(client_error(error, request.version, PRODUCER_FENCED_SINCE))}
