"""Which offset requests a consumer-protocol group accepts (Kafka's rules): a request from
a member must carry its current member epoch; one from no member (admin tools, ``assign()``
users) may commit only while the group is Empty, and may always fetch."""

from __future__ import annotations

from brokerd.groups.consumer.group import ConsumerGroup, ConsumerGroupState
from brokerd.protocol import ErrorCode


def commit_error(group: ConsumerGroup, member_id: str, member_epoch: int) -> ErrorCode:
    """OffsetCommit (``generation_id_or_member_epoch`` is the member epoch)."""
    if not member_id and member_epoch < 0:
        return (ErrorCode.NONE if group.state == ConsumerGroupState.EMPTY
                else ErrorCode.UNKNOWN_MEMBER_ID)
    return _member_error(group, member_id, member_epoch)


def fetch_error(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
    """OffsetFetch v9, which may name the member asking."""
    if member_id is None and member_epoch < 0:
        return ErrorCode.NONE
    return _member_error(group, member_id or "", member_epoch)


def _member_error(group: ConsumerGroup, member_id: str, member_epoch: int) -> ErrorCode:
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != member.current.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE
