"""Withdraw a deleted quota override from the brokers, however it was deleted.

Overrides are deleted directly (``services.delete_quota``) or by cascade when their tenant or
principal goes; ``tenants`` must not know about overrides (it sits below ``quotas``), so the
override republishes itself after the deleting transaction commits.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete
from django.dispatch import receiver

from tenants.audit import publish_on_commit

from . import tasks
from .models import QuotaOverride


@receiver(post_delete, sender=QuotaOverride, dispatch_uid="quotas.unpublish_deleted_override")
def unpublish_deleted_override(sender: type[QuotaOverride], instance: QuotaOverride, **kwargs: Any) -> None:
    publish_on_commit(tasks.publish_quota, instance.entity_path)
