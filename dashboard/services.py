"""Console actions on the cluster itself (not on desired state): consumer-group offset resets.

Same pattern as ``tenants.services``: one function per action, the audit row and the action in
one transaction (a refused or failed Kafka request rolls the audit row back), callers have
parsed and authorised.  Refusals raise ``django.core.exceptions.ValidationError``.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from tenants.audit import record
from tenants.models import Tenant
from tenants.services import Actor

from . import kafka
from .offsets import PlannedReset, ResetRequest, plan_reset


def preview_reset(tenant: Tenant, group: str, request: ResetRequest,
                  admin: kafka.AdminClient | None = None) -> list[PlannedReset]:
    """Where the offsets would go (read-only); refused while the group has members.

    Raises ``kafka.KafkaRequestFailed`` when the brokers do not answer, including for only some
    of the partitions (a plan leaving them out would look complete)."""
    admin = admin or kafka.admin_client()
    physical_group = f"{tenant.slug}.{group}"
    physical_topic = f"{tenant.slug}.{request.topic}"
    description = kafka.describe_groups(admin, [physical_group]).get(physical_group)
    if description is not None and description.active:
        raise ValidationError(
            f"Group {group} is {description.state.lower()} with {len(description.members)} "
            "member(s); offsets can only be reset while no consumer is connected. "
            "Stop its consumers and try again.")
    count = kafka.partition_counts(admin).get(physical_topic)
    if count is None:
        raise ValidationError(f"Topic {request.topic} does not exist.")
    if request.partition is not None and not 0 <= request.partition < count:
        raise ValidationError(f"Topic {request.topic} has no partition {request.partition}.")
    partitions = [(physical_topic, p) for p in range(count)
                  if request.partition is None or p == request.partition]
    current = kafka.committed_offsets(admin, [physical_group]).get(physical_group, {})
    bounds = kafka.log_bounds(admin, partitions)
    unanswered = [p for _, p in partitions if (physical_topic, p) not in bounds]
    if unanswered:  # their leader is down or slow: a partial plan would look complete
        raise kafka.KafkaRequestFailed(
            f"no offsets for partition(s) {', '.join(map(str, unanswered))} of {request.topic}: "
            "their leader did not answer")
    by_timestamp = (kafka.offsets_for_timestamp(admin, partitions, request.timestamp_ms)
                    if request.strategy == "timestamp" and request.timestamp_ms is not None
                    else None)
    try:
        planned = plan_reset(request, partitions, current, bounds, by_timestamp)
    except ValueError as exc:
        raise ValidationError(str(exc)) from exc
    return [PlannedReset(request.topic, p.partition, p.current, p.target, p.lag_after)
            for p in planned]


@transaction.atomic
def reset_offsets(actor: Actor, tenant: Tenant, group: str, request: ResetRequest,
                  admin: kafka.AdminClient | None = None) -> list[PlannedReset]:
    """Move an inactive group's committed offsets (OffsetCommit through the AdminClient)."""
    admin = admin or kafka.admin_client()
    planned = preview_reset(tenant, group, request, admin)
    if not planned:
        raise ValidationError("No partition to reset.")
    record(actor, tenant, "consumer_group.reset_offsets", f"{tenant.slug}.{group}",
           strategy=request.strategy, topic=request.topic,
           targets={f"{p.topic}-{p.partition}": p.target for p in planned})
    try:
        kafka.alter_offsets(admin, f"{tenant.slug}.{group}",
                            {(f"{tenant.slug}.{p.topic}", p.partition): p.target for p in planned})
    except kafka.KafkaRequestFailed as exc:
        raise ValidationError(f"The brokers refused the reset: {exc}") from exc
    return planned
