"""Periodic billing: on the 1st of each month, bill the month that just closed."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from .billing import load_month, previous_month, run_job


@shared_task
def bill_previous_month() -> int:
    month = previous_month(timezone.now().date())
    month_dir = run_job(month, settings.VAR_DIR / "billing",
                        bootstrap=settings.OPERATOR_BOOTSTRAP_SERVERS.split(",")[0])
    return load_month(month, month_dir)
