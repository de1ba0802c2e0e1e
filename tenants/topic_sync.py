"""Ask the brokers for the topics the control plane wants (control plane → cluster).

The control plane never writes topic znodes and never places replicas: it sends Kafka admin
requests (``kafka_admin``) and brokerd's controller acts — placing replicas rack-aware,
validating configs, deleting logs.  Like the rest of publication, ``sync_topic`` names a
topic, not a change: it compares what the database wants with what the brokers report and
asks for the difference, so it is idempotent and safe to retry.

Direction of truth (``docs/control-plane.md``): the database decides a topic's existence
until the cluster has it (``Topic.assignment`` is None: create it) and for deletions asked for
here (``TopicDeletion``: delete it); once on the cluster, the cluster is the truth for its
existence and placement, so a placed topic the cluster no longer has is *not* recreated —
``cluster_topics.discover`` forgets it.  Partitions only grow (CreatePartitions); configs are
the database's (IncrementalAlterConfigs sets and deletes the difference).
"""

from __future__ import annotations

from confluent_kafka.admin import AdminClient
from django.conf import settings
from django.utils import timezone

from . import kafka_admin
from .models import Topic, TopicDeletion


class WaitingForBrokers(ValueError):
    """Too few brokers registered for the topic yet; the task retries (a ValueError, as before)."""


def replication_factor(topic: Topic, live_brokers: int) -> int:
    """The factor to create ``topic`` with.

    An explicit factor is asked for as is (brokerd refuses it while fewer brokers are up, and
    the task retries).  Without one the topic gets ``DEFAULT_REPLICATION_FACTOR``, or every
    live broker when fewer are registered (a one-broker dev setup) once it is
    ``DEFAULT_RF_WAIT_S`` old: brokers starting with the control plane register one by one,
    and the first alone must not decide a topic's factor for good.
    """
    if topic.replication_factor:
        return topic.replication_factor
    factor = settings.DEFAULT_REPLICATION_FACTOR
    if live_brokers >= factor:
        return factor
    age = (timezone.now() - topic.created_at).total_seconds()
    if live_brokers == 0 or age < settings.DEFAULT_RF_WAIT_S:
        raise WaitingForBrokers(f"{live_brokers} broker(s) registered; topic {topic} waits for "
                                f"{factor} up to {settings.DEFAULT_RF_WAIT_S}s after its creation")
    return live_brokers


def topic_config(topic: Topic, factor: int) -> dict[str, str]:
    """The configs asked for: the tenant's own, plus ``min.insync.replicas`` =
    ``TENANT_MIN_INSYNC_REPLICAS`` when it has 3 or more replicas and the tenant set none."""
    config = {k: str(v) for k, v in topic.configs.items()}
    if factor >= 3:
        config.setdefault("min.insync.replicas", str(settings.TENANT_MIN_INSYNC_REPLICAS))
    return config


def _observed(topic: Topic, cluster: kafka_admin.ClusterTopic) -> None:
    """Remember where the controller placed the topic (shown by the API; marks it as on the cluster)."""
    Topic.objects.filter(pk=topic.pk).update(assignment=cluster.replicas,
                                             replication_factor=cluster.replication_factor)


def _delete(admin: AdminClient, physical_name: str) -> list[str]:
    """DeleteTopics for a topic deleted here; the tombstone goes once the brokers have done it."""
    pending = TopicDeletion.objects.filter(topic=physical_name).exists()
    if not pending:
        return []
    deleted = kafka_admin.delete_topic(admin, physical_name)
    TopicDeletion.objects.filter(topic=physical_name).delete()
    return [f"deleted topic {physical_name}"] if deleted else []


def _align(admin: AdminClient, topic: Topic, cluster: kafka_admin.ClusterTopic) -> list[str]:
    """Grow the partitions and set the configs of a topic the cluster has."""
    changes = []
    name = topic.physical_name
    if topic.partitions > cluster.partitions:
        kafka_admin.add_partitions(admin, name, topic.partitions)
        changes.append(f"grew topic {name} to {topic.partitions} partitions")
    wanted = topic_config(topic, cluster.replication_factor)
    current = kafka_admin.topic_configs(admin, name)
    to_set = {k: v for k, v in wanted.items() if current.get(k) != v}
    to_delete = set(current) - set(wanted)
    if to_set or to_delete:
        kafka_admin.alter_topic_configs(admin, name, to_set, to_delete)
        changes.append(f"configured topic {name}: set {sorted(to_set)}, removed {sorted(to_delete)}")
    return changes


def sync_topic(admin: AdminClient, physical_name: str) -> list[str]:
    """Make the cluster's topic match the database's; returns what was asked for.

    Raises ``kafka_admin.KafkaRequestFailed`` (brokers unreachable, or the request refused:
    e.g. INVALID_REPLICATION_FACTOR while brokers are starting, INVALID_CONFIG) and
    :class:`WaitingForBrokers`; the task retries both.
    """
    slug, _, name = physical_name.partition(".")
    topic = Topic.objects.select_related("tenant").filter(tenant__slug=slug, name=name).first()
    if topic is None:
        return _delete(admin, physical_name)
    cluster = kafka_admin.describe_topic(admin, physical_name)
    if cluster is None and topic.assignment is not None:
        return []  # created, then deleted over Kafka: discovery forgets the row
    changes = []
    if cluster is None:
        factor = replication_factor(topic, kafka_admin.live_broker_count(admin))
        if kafka_admin.create_topic(admin, physical_name, topic.partitions, factor,
                                    topic_config(topic, factor)):
            changes.append(f"created topic {physical_name} ({topic.partitions} partitions, RF {factor})")
        cluster = kafka_admin.describe_topic(admin, physical_name)
        if cluster is None:
            raise kafka_admin.KafkaRequestFailed(f"topic {physical_name} created but not yet described")
    changes += _align(admin, topic, cluster)
    if topic.partitions > cluster.partitions:  # grown just now: read where the new ones went
        cluster = kafka_admin.describe_topic(admin, physical_name) or cluster
    _observed(topic, cluster)
    return changes


def reconcile(admin: AdminClient) -> list[str]:
    """``sync_topic`` for every topic of the database and every deletion still pending."""
    names = [t.physical_name for t in Topic.objects.select_related("tenant").order_by("id")]
    names += list(TopicDeletion.objects.order_by("id").values_list("topic", flat=True))
    changes: list[str] = []
    for name in names:
        changes += sync_topic(admin, name)
    return changes
