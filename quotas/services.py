"""The only way to change plans and quota overrides (transaction + audit row + publication)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from tenants import tasks, znodes
from tenants.audit import publish_on_commit, record
from tenants.models import Principal, Tenant
from tenants.services import Actor

from .models import DEFAULT_ENTITY, Plan, QuotaOverride

LIMIT_FIELDS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")


@transaction.atomic
def create_plan(actor: Actor, **fields: Any) -> Plan:
    plan = Plan(**fields)
    plan.full_clean()
    plan.save()
    record(actor, None, "plan.create", plan.slug, **{k: v for k, v in fields.items() if k != "prices"})
    return plan


@transaction.atomic
def update_plan(actor: Actor, plan: Plan, **changes: Any) -> Plan:
    """Change a plan; every tenant on it is republished (its quota defaults live in /tenants)."""
    for field, value in changes.items():
        setattr(plan, field, value)
    plan.full_clean()
    plan.save()
    record(actor, None, "plan.update", plan.slug, **{k: v for k, v in changes.items() if k != "prices"})
    for slug in plan.tenants.values_list("slug", flat=True):
        publish_on_commit(tasks.publish_tenant, slug)
    return plan


@transaction.atomic
def set_quota(actor: Actor, *, tenant: Tenant | None, principal: Principal | None,
              default_user: bool = False, client_id: str = "", **limits: Any) -> QuotaOverride:
    """Create or replace the override for one entity (limits not given are cleared)."""
    if principal is not None and default_user:
        raise ValidationError({"user": "an entity has one user: a principal or <default>"})
    if principal is not None and tenant is not None and principal.tenant_id != tenant.pk:
        raise ValidationError({"principal": "not a principal of this tenant"})
    if not any(limits.get(f) is not None for f in LIMIT_FIELDS):
        raise ValidationError({"non_field_errors": f"set at least one of {', '.join(LIMIT_FIELDS)}"})
    user = principal.kafka_user if principal else (DEFAULT_ENTITY if default_user else None)
    try:
        path = znodes.entity_path(user, client_id or None)
    except ValueError as exc:
        raise ValidationError({"non_field_errors": str(exc)}) from exc
    override, created = QuotaOverride.objects.select_for_update().get_or_create(
        entity_path=path,
        defaults={"tenant": tenant, "principal": principal, "default_user": default_user,
                  "client_id": client_id},
    )
    if not created and override.tenant_id != (tenant.pk if tenant else None):
        raise ValidationError({"non_field_errors": "this quota entity belongs to another owner"})
    for field in LIMIT_FIELDS:
        setattr(override, field, limits.get(field))
    override.full_clean()
    override.save()
    record(actor, tenant, "quota.set", path, **{f: limits.get(f) for f in LIMIT_FIELDS})
    publish_on_commit(tasks.publish_quota, path)
    return override


@transaction.atomic
def delete_quota(actor: Actor, override: QuotaOverride) -> None:
    record(actor, override.tenant, "quota.delete", override.entity_path)
    publish_on_commit(tasks.publish_quota, override.entity_path)
    override.delete()
