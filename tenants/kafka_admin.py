"""The control plane's Kafka admin client, and the topic requests it sends brokerd.

The control plane asks and brokerd acts: topics are created, grown, reconfigured and deleted
with Kafka's own admin APIs (CreateTopics, CreatePartitions, IncrementalAlterConfigs,
DeleteTopics) on the operator listener (``settings.OPERATOR_BOOTSTRAP_SERVERS``, PLAINTEXT,
where names are physical: ``<slug>.<name>``).  brokerd's controller places the replicas
(rack-aware) and validates the configs, so a refused request is the broker's verdict, raised as
:class:`KafkaRequestFailed` with Kafka's error name; the Celery tasks retry it.

Every call blocks for at most ``settings.KAFKA_ADMIN_TIMEOUT_S``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from django.conf import settings


class KafkaRequestFailed(Exception):
    """The brokers did not answer within the timeout, or refused the request."""


def admin_client() -> AdminClient:
    return AdminClient({"bootstrap.servers": settings.OPERATOR_BOOTSTRAP_SERVERS,
                        "socket.timeout.ms": int(settings.KAFKA_ADMIN_TIMEOUT_S * 1000)})


def admin_timeout() -> float:
    return float(settings.KAFKA_ADMIN_TIMEOUT_S)


def _wait(future: Future, what: str, accepted: Collection[int] = ()) -> tuple[object, int | None]:
    """``(result, None)``, or ``(None, code)`` for an error code in ``accepted`` (e.g. "exists")."""
    try:
        return future.result(admin_timeout()), None
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if error is not None and error.code() in accepted:
            return None, error.code()
        detail = f"{error.name()}: {error.str()}" if error is not None else str(exc)
        raise KafkaRequestFailed(f"{what}: {detail}") from exc
    except TimeoutError as exc:
        raise KafkaRequestFailed(f"{what}: no answer within {admin_timeout()}s") from exc


@dataclass(frozen=True)
class ClusterTopic:
    """A topic as the brokers describe it: each partition's replicas, as the controller placed them."""

    name: str
    replicas: dict[str, list[int]]

    @property
    def partitions(self) -> int:
        return len(self.replicas)

    @property
    def replication_factor(self) -> int:
        return min((len(r) for r in self.replicas.values()), default=0)


def live_broker_count(admin: AdminClient) -> int:
    """Brokers registered now (DescribeCluster)."""
    cluster, _ = _wait(admin.describe_cluster(request_timeout=admin_timeout()), "describe cluster")
    return len(getattr(cluster, "nodes", None) or [])


def describe_topic(admin: AdminClient, name: str) -> ClusterTopic | None:
    """The topic's partitions and replicas (Metadata), or None when the cluster has no such topic."""
    future = admin.describe_topics(TopicCollection([name]), request_timeout=admin_timeout())[name]
    described, missing = _wait(future, f"describe topic {name}",
                               accepted={KafkaError.UNKNOWN_TOPIC_OR_PART})
    if missing is not None:
        return None
    return ClusterTopic(name, {str(p.id): [node.id for node in p.replicas]
                               for p in described.partitions})  # type: ignore[attr-defined]


def create_topic(admin: AdminClient, name: str, partitions: int, replication_factor: int,
                 configs: Mapping[str, str]) -> bool:
    """CreateTopics; False when the topic existed already (a retried task, a racing client)."""
    new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                   config=dict(configs))
    future = admin.create_topics([new], operation_timeout=admin_timeout(),
                                 request_timeout=admin_timeout())[name]
    _, existed = _wait(future, f"create topic {name}", accepted={KafkaError.TOPIC_ALREADY_EXISTS})
    return existed is None


def delete_topic(admin: AdminClient, name: str) -> bool:
    """DeleteTopics; False when the cluster had no such topic (deleted already)."""
    future = admin.delete_topics([name], operation_timeout=admin_timeout(),
                                 request_timeout=admin_timeout())[name]
    _, missing = _wait(future, f"delete topic {name}", accepted={KafkaError.UNKNOWN_TOPIC_OR_PART})
    return missing is None


def add_partitions(admin: AdminClient, name: str, total: int) -> None:
    """CreatePartitions: grow the topic to ``total`` partitions, placed by the controller."""
    future = admin.create_partitions([NewPartitions(name, total)], operation_timeout=admin_timeout(),
                                     request_timeout=admin_timeout())[name]
    _wait(future, f"grow topic {name} to {total} partitions")


def topic_configs(admin: AdminClient, name: str) -> dict[str, str]:
    """The topic's own config overrides (DescribeConfigs, source DYNAMIC_TOPIC_CONFIG)."""
    resource = ConfigResource(ResourceType.TOPIC, name)
    future = admin.describe_configs([resource], request_timeout=admin_timeout())[resource]
    entries, _ = _wait(future, f"describe configs of {name}")
    assert isinstance(entries, dict)
    return {key: entry.value for key, entry in entries.items()
            if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and entry.value is not None}


def alter_topic_configs(admin: AdminClient, name: str, set_: Mapping[str, str],
                        delete: Iterable[str], *, validate_only: bool = False) -> None:
    """IncrementalAlterConfigs: set ``set_`` and remove the keys in ``delete``; with
    ``validate_only`` the brokers only check the change (and refuse it as they would)."""
    entries = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
               for key, value in sorted(set_.items())]
    entries += [ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE)
                for key in sorted(delete)]
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
    future = admin.incremental_alter_configs([resource], request_timeout=admin_timeout(),
                                             validate_only=validate_only)[resource]
    _wait(future, f"{'validate' if validate_only else 'alter'} configs of {name}")


def validate_topic_configs(admin: AdminClient, name: str, set_: Mapping[str, str],
                           delete: Iterable[str]) -> None:
    """The brokers' verdict on a config change, before it is saved as desired state."""
    alter_topic_configs(admin, name, set_, delete, validate_only=True)
