"""OffsetCommit (8) v1-8: commits are fenced by generation (and instance id) and
acknowledged only once written to ``__consumer_offsets``.  v0 (offsets kept in ZooKeeper
by old Scala clients) is not served.

The group coordinator (``brokerd.groups``) holds all the logic; this module only routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Names
from brokerd.server.tenancy_rules import (
    GROUP_ID,
    RESPONSE_TOPICS,
    TOPIC_DENIED,
    commit_answer,
    every_commit_partition,
    group_gate,
)

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

API_KEY = ApiKey.OFFSET_COMMIT
MIN_VERSION, MAX_VERSION = 1, 8
# Where this API's names live and which ACL operations they need (server.tenancy).
TENANCY = ApiNames(
    request=(GROUP_ID, Names(("topics", "name"), Rt.TOPIC, Op.READ, TOPIC_DENIED)),
    response=(RESPONSE_TOPICS,),
    gates=(group_gate(Op.READ, every_commit_partition),),
    withheld=(("topics",), commit_answer))


async def handle(broker: Broker, request: Request) -> dict[str, Any]:
    return await broker.groups.offset_commit(request.body, request.version)
