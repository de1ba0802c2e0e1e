"""Invoices as the monthly billing job (``spark/billing.py``) computed them.

Loaded from the job's CSV output (``docs/billing.md``, "Output files"); never edited by
hand. Re-loading a month replaces that month's rows, so a re-run is idempotent.
"""

from __future__ import annotations

from django.db import models


class Invoice(models.Model):
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="invoices")
    month = models.CharField(max_length=7, help_text="YYYY-MM (UTC)")
    plan = models.CharField(max_length=40)
    currency = models.CharField(max_length=3)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField(help_text="exclusive")
    total = models.DecimalField(max_digits=18, decimal_places=2)
    loaded_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "month"], name="invoice_per_month")]
        ordering = ["-month"]

    def __str__(self) -> str:
        return f"{self.tenant.slug} {self.month}"


class InvoiceLine(models.Model):
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    line = models.PositiveSmallIntegerField()
    dimension = models.CharField(max_length=32)
    unit = models.CharField(max_length=32)
    usage = models.BigIntegerField(help_text="raw: bytes, byte-hours or partition-hours")
    quantity = models.DecimalField(max_digits=20, decimal_places=6)
    free = models.DecimalField(max_digits=20, decimal_places=6)
    billable = models.DecimalField(max_digits=20, decimal_places=6)
    amount = models.DecimalField(max_digits=18, decimal_places=2)

    class Meta:
        ordering = ["line"]


class UsageDay(models.Model):
    """One tenant-day of billed usage, for the console's charts."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="usage_days")
    month = models.CharField(max_length=7)
    day = models.DateField()
    bytes_in = models.BigIntegerField()
    bytes_out = models.BigIntegerField()
    produce_requests = models.BigIntegerField()
    fetch_requests = models.BigIntegerField()
    byte_hours = models.BigIntegerField()
    partition_hours = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "day"], name="usage_per_day")]
        ordering = ["day"]
