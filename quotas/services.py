"""The only way to change quota overrides (transaction + audit row + publication).

Plans are changed by ``tenants.services`` (a plan belongs below ``quotas``, with the tenants).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from tenants import znodes
from tenants.audit import publish_on_commit, record
from tenants.models import Principal, Tenant
from tenants.services import Actor

from . import tasks
from .models import DEFAULT_ENTITY, QuotaOverride

LIMIT_FIELDS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")


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
    """Delete an override; ``signals`` withdraws it from the brokers after commit."""
    record(actor, override.tenant, "quota.delete", override.entity_path)
    override.delete()
