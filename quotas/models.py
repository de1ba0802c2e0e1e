"""Plans (a tenant's quota defaults, limits and prices) and Kafka quota overrides.

A quota override is one Kafka quota entity, exactly as Kafka names them:
``users/<user>``, ``users/<user>/clients/<client-id>``, ``clients/<client-id>``,
where either part may be ``<default>``.  The user is a principal's Kafka user name.
Limits are bytes/second (``producer_byte_rate``, ``consumer_byte_rate``) and percent of
one request-handler thread (``request_percentage``); ``None`` means "not set at this level".
"""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models

DEFAULT_ENTITY = "<default>"


class Plan(models.Model):
    """What a tenant buys: quota defaults for its principals, a partition limit, and prices.

    The quota fields become the ``<default>`` user levels inside the tenant (the broker applies
    them to every principal of the tenant that has no more specific override).
    """

    slug = models.SlugField(unique=True, max_length=40)
    name = models.CharField(max_length=100)
    producer_byte_rate = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    consumer_byte_rate = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    request_percentage = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.01)])
    max_partitions = models.PositiveIntegerField(default=100)
    prices = models.JSONField(default=dict, blank=True, help_text="Price plan used by the billing job.")

    def __str__(self) -> str:
        return self.slug

    def quota_config(self) -> dict[str, str]:
        """The plan's quota defaults in Kafka's config form (strings, unset keys omitted)."""
        return quota_config(self.producer_byte_rate, self.consumer_byte_rate, self.request_percentage)


def quota_config(producer: int | None, consumer: int | None, request: float | None) -> dict[str, str]:
    """Kafka's quota config map: only the keys that are set, values as strings."""
    config: dict[str, str] = {}
    if producer is not None:
        config["producer_byte_rate"] = str(producer)
    if consumer is not None:
        config["consumer_byte_rate"] = str(consumer)
    if request is not None:
        config["request_percentage"] = str(request)
    return config


class QuotaOverride(models.Model):
    """One Kafka quota entity with its limits.

    ``tenant`` is set when a tenant owns the override (its user is then one of the tenant's
    principals); cluster-wide entries (``<default>`` user, client-id only) have no tenant and
    are managed by operators only.
    """

    tenant = models.ForeignKey("tenants.Tenant", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="quota_overrides")
    principal = models.ForeignKey("tenants.Principal", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="quota_overrides")
    default_user = models.BooleanField(default=False, help_text="The <default> user level.")
    client_id = models.CharField(max_length=255, blank=True, default="",
                                 help_text="A client id, '<default>', or empty for a user-only entity.")
    producer_byte_rate = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    consumer_byte_rate = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    request_percentage = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.01)])
    entity_path = models.CharField(max_length=600, unique=True, editable=False)

    def __str__(self) -> str:
        return self.entity_path

    @property
    def user(self) -> str | None:
        """The entity's Kafka user: a principal's user name, ``<default>``, or None."""
        if self.principal is not None:
            return self.principal.kafka_user
        return DEFAULT_ENTITY if self.default_user else None

    def config(self) -> dict[str, str]:
        return quota_config(self.producer_byte_rate, self.consumer_byte_rate, self.request_percentage)


# Billing results live in their own module; importing them here registers the models.
from .invoices import Invoice, InvoiceLine, UsageDay  # noqa: E402

__all__ = ["DEFAULT_ENTITY", "Invoice", "InvoiceLine", "Plan", "QuotaOverride", "UsageDay", "quota_config"]
