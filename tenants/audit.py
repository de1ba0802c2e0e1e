"""Helpers every service function uses: the audit row and publication after commit."""

from __future__ import annotations

from typing import Any

from celery import Task
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction

from .models import AuditEvent, Tenant


def record(actor: AbstractBaseUser | AnonymousUser | None, tenant: Tenant | None, action: str,
           target: str, **details: Any) -> None:
    """Write the audit row for one action (inside the action's transaction)."""
    user = actor if actor is not None and actor.is_authenticated else None
    AuditEvent.objects.create(actor=user, tenant=tenant, action=action, target=target, details=details)


def publish_on_commit(task: Task, *args: Any) -> None:
    """Enqueue a publication task once the transaction commits (never for a rolled-back write)."""
    transaction.on_commit(lambda: task.delay(*args))
