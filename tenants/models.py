"""The control plane's desired state for tenants, and the plans they buy.

Plans live here, not in ``quotas``, because a tenant cannot exist without one: ``quotas``
(overrides, invoices) sits above ``tenants`` and imports it, never the other way round.

Naming rules that the brokers rely on:
- A tenant slug is ``[a-z0-9-]`` (no dots), so the physical topic name ``<slug>.<name>``
  and the Kafka user name ``<slug>.<principal>`` split unambiguously at the first dot.
- An API key's ``key`` is the SASL username; its secret is never stored in clear: only a
  password hash (for the API) and salted SCRAM-SHA-256/512 credentials (for the brokers).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

SLUG_VALIDATOR = RegexValidator(r"^[a-z0-9][a-z0-9-]{0,39}$", "lower-case letters, digits and '-'")
NAME_VALIDATOR = RegexValidator(r"^[a-zA-Z0-9_-]{1,100}$", "letters, digits, '_' and '-'")
TOPIC_NAME_VALIDATOR = RegexValidator(
    r"^(?!__)[a-zA-Z0-9._-]{1,200}$",
    "letters, digits, '.', '_' and '-'; at most 200; not starting with '__' (internal topics)",
)


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
    acl_admin = models.BooleanField(
        default=False, help_text="the tenant's principals may manage its ACLs over Kafka "
        "(CreateAcls/DescribeAcls/DeleteAcls, with Alter/Describe on the cluster)")
    replication_factor = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(7)],
        help_text="the replication factor of every topic the plan's tenants create over Kafka "
                  "(-1 gets it, any other factor is refused); empty: the cluster's "
                  "default.replication.factor")
    prices = models.JSONField(default=dict, blank=True, help_text="Price plan used by the billing job.")

    class Meta:
        # The model moved from ``quotas`` (tenants/migrations/0005): its table kept its name so
        # existing databases move without copying rows or rebuilding foreign keys.
        db_table = "quotas_plan"

    def __str__(self) -> str:
        return self.slug

    def quota_config(self) -> dict[str, str]:
        """The plan's quota defaults in Kafka's config form (strings, unset keys omitted)."""
        return quota_config(self.producer_byte_rate, self.consumer_byte_rate, self.request_percentage)


class Tenant(models.Model):
    ACTIVE = "active"
    SUSPENDED = "suspended"
    STATUS_CHOICES = [(ACTIVE, "active"), (SUSPENDED, "suspended")]

    slug = models.CharField(max_length=40, unique=True, validators=[SLUG_VALIDATOR])
    name = models.CharField(max_length=200)
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="tenants")
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.slug


class Principal(models.Model):
    """A service account (authenticates to brokers with API keys) or a console user."""

    SERVICE_ACCOUNT = "service_account"
    USER = "user"
    KIND_CHOICES = [(SERVICE_ACCOUNT, "service account"), (USER, "console user")]
    ADMIN = "admin"
    MEMBER = "member"
    READ_ONLY = "read_only"  # a console user who may see the tenant's pages but change nothing
    ROLE_CHOICES = [(ADMIN, "tenant admin"), (MEMBER, "member"), (READ_ONLY, "read-only")]
    CONSOLE_ROLES = (ADMIN, READ_ONLY)  # the roles an invited console user may have

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="principals")
    name = models.CharField(max_length=100, validators=[NAME_VALIDATOR])
    kind = models.CharField(max_length=20, choices=KIND_CHOICES, default=SERVICE_ACCOUNT)
    role = models.CharField(max_length=10, choices=ROLE_CHOICES, default=MEMBER)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True,
                                on_delete=models.CASCADE, related_name="principal")
    description = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="principal_name_per_tenant")]

    def __str__(self) -> str:
        return self.kafka_user

    @property
    def kafka_user(self) -> str:
        """The principal's name on the wire (quota user, ACL principal): ``<tenant>.<name>``."""
        return f"{self.tenant.slug}.{self.name}"


class ApiKey(models.Model):
    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="api_keys")
    key = models.CharField(max_length=32, unique=True)
    secret_hash = models.CharField(max_length=256)
    scram_sha_256 = models.CharField(max_length=512)
    scram_sha_512 = models.CharField(max_length=512)
    description = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key


class ClientCertificate(models.Model):
    """A client certificate issued to a service account (mTLS); its private key is not kept.

    Revoking keeps the row (``revoked_at``) so the serial stays published under
    ``/client-certs/revoked`` until the certificate has expired anyway."""

    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="certificates")
    serial = models.CharField(max_length=40, unique=True, help_text="upper-case hex")
    subject = models.CharField(max_length=300)
    not_after = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.serial


class ClientId(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="client_ids")
    client_id = models.CharField(max_length=255, validators=[RegexValidator(r"^[\x21-\x7e]{1,255}$")])
    description = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "client_id"], name="client_id_per_tenant")]

    def __str__(self) -> str:
        return self.client_id


class Topic(models.Model):
    """A tenant topic, created here (REST, console) or by a Kafka client and discovered.

    ``assignment`` is None until the topic has been seen on the cluster; afterwards it is the
    placement brokerd's controller chose, as last observed (the cluster decides placement).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="topics")
    name = models.CharField(max_length=200, validators=[TOPIC_NAME_VALIDATOR])
    topic_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    partitions = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(1000)])
    replication_factor = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(7)],
        help_text="empty: the cluster default, resolved against the live brokers when placed")
    configs = models.JSONField(default=dict, blank=True)
    assignment = models.JSONField(null=True, blank=True, editable=False,
                                  help_text="partition -> replica broker ids, as the cluster placed them")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="topic_name_per_tenant")]

    def __str__(self) -> str:
        return self.physical_name

    @property
    def physical_name(self) -> str:
        """The topic's name inside the cluster: the tenant's namespace prefix plus its own name."""
        return f"{self.tenant.slug}.{self.name}"


class TopicDeletion(models.Model):
    """A topic deleted here whose DeleteTopics has not succeeded yet.

    Until it has, the brokers still list the topic: discovery (``cluster_topics``) must not take
    it for one a client created over the Kafka protocol, and the name cannot be created again.
    """

    topic = models.CharField(max_length=249, unique=True, help_text="physical topic name on the cluster")
    requested_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.topic


class AuditEvent(models.Model):
    """One row per write through a service function: who did what to which object."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    tenant = models.ForeignKey(Tenant, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=600)
    details = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class Acl(models.Model):
    """An allow rule: a principal may perform an operation on a resource (literal or prefix).

    Resource names are the tenant's own (unprefixed); on the wire and in ZooKeeper they carry the
    tenant's namespace prefix, so a rule can never reach another tenant's resources.
    """

    TOPIC = "Topic"
    GROUP = "Group"
    TRANSACTIONAL_ID = "TransactionalId"
    CLUSTER = "Cluster"
    RESOURCE_TYPES = [(TOPIC, "topic"), (GROUP, "consumer group"),
                      (TRANSACTIONAL_ID, "transactional id"), (CLUSTER, "cluster")]
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"
    PATTERN_TYPES = [(LITERAL, "literal"), (PREFIXED, "prefixed")]
    OPERATIONS = [(op, op.lower()) for op in (
        "All", "Read", "Write", "Create", "Delete", "Alter", "Describe", "DescribeConfigs",
        "AlterConfigs", "IdempotentWrite")]
    CLUSTER_NAME = "kafka-cluster"
    # The cluster is shared: a tenant may manage its ACLs (Alter, Describe), create topics,
    # produce idempotently and read configs there, never change broker configs (AlterConfigs,
    # or All, which holds it).  brokerd applies the same rule to a tenant's CreateAcls.
    TENANT_CLUSTER_OPERATIONS = frozenset({"Alter", "Describe", "Create", "IdempotentWrite",
                                           "DescribeConfigs"})

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="acls")
    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="acls")
    resource_type = models.CharField(max_length=20, choices=RESOURCE_TYPES)
    pattern_type = models.CharField(max_length=10, choices=PATTERN_TYPES, default=LITERAL)
    resource_name = models.CharField(max_length=200, blank=True, help_text="a prefix may be empty: all")
    operation = models.CharField(max_length=20, choices=OPERATIONS)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["principal", "resource_type", "pattern_type", "resource_name", "operation"],
            name="acl_unique_rule")]

    def __str__(self) -> str:
        resource = f"{self.resource_type}:{self.pattern_type}:{self.resource_name}"
        return f"{self.principal} {self.operation} {resource}"

    @property
    def physical_resource_name(self) -> str:
        """The resource's cluster-wide name: tenant-prefixed, except the cluster itself."""
        if self.resource_type == self.CLUSTER:
            return self.CLUSTER_NAME
        return f"{self.tenant.slug}.{self.resource_name}"


class PublishedAcls(models.Model):
    """The allow rules the control plane last wrote to one ``/acls/…`` resource znode.

    The base of the three-way merge in ``acl_sync``: a rule in ZooKeeper but not here was
    added over Kafka (adopted), a rule here but no longer in ZooKeeper was deleted over
    Kafka (its row is forgotten); everything else the database decides.
    """

    pattern_type = models.CharField(max_length=10)
    resource_type = models.CharField(max_length=20)
    resource_name = models.CharField(max_length=255, help_text="cluster-wide name")
    entries = models.JSONField(default=list, help_text="[principal, operation, host] triples")

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["pattern_type", "resource_type", "resource_name"], name="published_acls_resource")]

    def __str__(self) -> str:
        return f"{self.resource_type}:{self.pattern_type}:{self.resource_name}"


class Reassignment(models.Model):
    """An operator's request to move one partition's replicas (Kafka's partition reassignment).

    States: ``pending`` (saved, the request not yet in ZooKeeper), ``running`` (in
    ``/admin/reassign_partitions``; the controller is moving it), ``complete`` (the controller
    removed it from the request and the assignment is the target), ``failed`` (the controller
    dropped it with another assignment, or the topic went away).  At most one pending or running
    reassignment per partition, as Kafka refuses a second move of a partition that is moving.
    """

    PENDING = "pending"
    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    STATE_CHOICES = [(s, s) for s in (PENDING, RUNNING, COMPLETE, FAILED)]
    ACTIVE = (PENDING, RUNNING)

    topic = models.CharField(max_length=249, help_text="physical topic name on the cluster")
    partition = models.PositiveIntegerField()
    replicas = models.JSONField(help_text="target replica broker ids; the first is the preferred leader")
    original_replicas = models.JSONField(default=list, help_text="the assignment when requested")
    throttle = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="follower replication throttle while moving, bytes/s")
    state = models.CharField(max_length=10, choices=STATE_CHOICES, default=PENDING)
    progress = models.CharField(max_length=500, blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(
            fields=["topic", "partition"], condition=models.Q(state__in=["pending", "running"]),
            name="one_active_reassignment_per_partition")]

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} -> {self.replicas}"
