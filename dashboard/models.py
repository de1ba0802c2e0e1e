"""What the lag snapshot task observes over the Kafka protocol (monitoring data, not desired state).

These rows are written only by the snapshot task (``dashboard.snapshots``), never by console
requests; names are the tenant's own (without the ``<slug>.`` prefix).

- ``ConsumerGroupLag``: one row per (tenant, group), replaced at every snapshot: the group's
  type (``classic`` or ``consumer``, KIP-848), state, assignor, epochs (consumer protocol) and
  members (with member epochs and target assignments for the consumer protocol), and its
  evaluated lag (``dashboard.lag.group_lag_to_json``) including the
  Burrow commit window per partition.
- ``LagSample``: the bounded history, one row per (group, partition, snapshot); rows older than
  ``settings.LAG_HISTORY_SECONDS`` are pruned by every snapshot.  It feeds the lag chart.
- ``TopicThroughput``: per topic, the retained record count and the produce rate in records/s.
"""

from __future__ import annotations

from django.db import models

from tenants.models import Tenant


class ConsumerGroupLag(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="group_lags")
    group = models.CharField(max_length=255)
    state = models.CharField(max_length=32)
    group_type = models.CharField(max_length=16, default="classic")
    assignor = models.CharField(max_length=255, blank=True, default="")
    group_epoch = models.IntegerField(null=True)  # consumer protocol only, as is the next one
    assignment_epoch = models.IntegerField(null=True)
    members = models.JSONField(default=list)
    lag = models.JSONField(default=dict)
    status = models.CharField(max_length=8)
    total_lag = models.BigIntegerField(default=0)
    max_lag = models.BigIntegerField(default=0)
    time_lag_s = models.FloatField(null=True)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "group"], name="group_lag_per_tenant")]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.group}"


class LagSample(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=200)
    partition = models.IntegerField()
    taken_at = models.DateTimeField(db_index=True)
    committed = models.BigIntegerField()
    high_watermark = models.BigIntegerField()
    lag = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "group", "taken_at"], name="lag_sample_group_time")]


class TopicThroughput(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    topic = models.CharField(max_length=200)
    records = models.BigIntegerField(default=0, help_text="retained: sum of high watermark - log start")
    end_offset = models.BigIntegerField(default=0, help_text="sum of high watermarks")
    rate = models.FloatField(null=True, help_text="records/s produced between the last two snapshots")
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "topic"], name="throughput_per_topic")]
