"""The records that take a consumer group from one state to another.

Operations work on a copy of the group and this module writes down the difference in
Kafka's record types (see :mod:`.records`); the coordinator appends them and replays them
into the live group, so the in-memory state is always what the log says.
"""

from __future__ import annotations

from brokerd.groups.consumer.group import ConsumerGroup, ConsumerMember, Reconciliation
from brokerd.groups.consumer.records import (
    CURRENT_ASSIGNMENT_KEY,
    MEMBER_KEY,
    METADATA_KEY,
    TARGET_MEMBER_KEY,
    TARGET_METADATA_KEY,
    ConsumerKey,
    encode_key,
    encode_value,
    to_wire,
)
from brokerd.groups.outcome import Record


def _record(kind: int, group_id: str, member_id: str | None,
            value: dict[str, object] | None) -> Record:
    return (encode_key(ConsumerKey(kind, group_id, member_id)),
            None if value is None else encode_value(kind, value))


def current_value(current: Reconciliation) -> dict[str, object]:
    return {"member_epoch": current.member_epoch,
            "previous_member_epoch": current.previous_member_epoch,
            "state": int(current.state),
            "assigned_partitions": to_wire(current.assigned),
            "partitions_pending_revocation": to_wire(current.pending_revocation)}


def diff(before: ConsumerGroup | None, after: ConsumerGroup) -> list[Record]:
    """Records turning ``before`` (None: nothing persisted) into ``after``.

    Order matters for a reader replaying them: removed members' records go first (current
    assignment, target, metadata: Kafka's order), then new or changed member metadata, the
    group epoch, the target (members, then its epoch), and the current assignments last.
    """
    gid = after.group_id
    old_members: dict[str, ConsumerMember] = before.members if before else {}
    old_target = before.target if before else {}
    records: list[Record] = []
    for member_id in old_members.keys() - after.members.keys():
        records.append(_record(CURRENT_ASSIGNMENT_KEY, gid, member_id, None))
        if member_id in old_target:
            records.append(_record(TARGET_MEMBER_KEY, gid, member_id, None))
        records.append(_record(MEMBER_KEY, gid, member_id, None))
    for member_id, member in after.members.items():
        old = old_members.get(member_id)
        if old is None or old.metadata_value() != member.metadata_value():
            records.append(_record(MEMBER_KEY, gid, member_id, member.metadata_value()))
    if (before is None or before.group_epoch != after.group_epoch
            or before.metadata_hash != after.metadata_hash):
        records.append(_record(METADATA_KEY, gid, None, {
            "epoch": after.group_epoch, "metadata_hash": after.metadata_hash}))
    for member_id in old_target.keys() - after.target.keys():
        if member_id in after.members:  # removed members' targets are already tombstoned
            records.append(_record(TARGET_MEMBER_KEY, gid, member_id, None))
    for member_id, partitions in sorted(after.target.items()):
        if old_target.get(member_id) != partitions:
            records.append(_record(TARGET_MEMBER_KEY, gid, member_id,
                                   {"topic_partitions": to_wire(partitions)}))
    if before is None or before.assignment_epoch != after.assignment_epoch:
        records.append(_record(TARGET_METADATA_KEY, gid, None,
                               {"assignment_epoch": after.assignment_epoch}))
    for member_id, member in after.members.items():
        old = old_members.get(member_id)
        if old is None or old.current != member.current:
            records.append(_record(CURRENT_ASSIGNMENT_KEY, gid, member_id,
                                   current_value(member.current)))
    return records


def deletion(group: ConsumerGroup) -> list[Record]:
    """Tombstones forgetting an empty group (its offsets are the caller's)."""
    gid = group.group_id
    records = [_record(TARGET_MEMBER_KEY, gid, member_id, None) for member_id in group.target]
    records.append(_record(TARGET_METADATA_KEY, gid, None, None))
    records.append(_record(METADATA_KEY, gid, None, None))
    return records
