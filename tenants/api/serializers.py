"""Request/response shapes of the REST API; validation only, no writes (services do those)."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from ..models import Acl, ApiKey, ClientId, Plan, Principal, Reassignment, Tenant, Topic

# Topic configs a tenant may set, with the check each value must pass.
TOPIC_CONFIGS: dict[str, str] = {
    "cleanup.policy": r"^(delete|compact|compact,delete|delete,compact)$",
    "retention.ms": r"^-?\d+$",
    "retention.bytes": r"^-?\d+$",
    "segment.bytes": r"^\d+$",
    "segment.ms": r"^\d+$",
    "max.message.bytes": r"^\d+$",
    "min.insync.replicas": r"^\d+$",
    "message.timestamp.type": r"^(CreateTime|LogAppendTime)$",
    "delete.retention.ms": r"^\d+$",
    "min.compaction.lag.ms": r"^\d+$",
    "compression.type": r"^(producer|uncompressed|gzip|snappy|lz4|zstd)$",
    "flush.messages": r"^\d+$",
    "flush.ms": r"^\d+$",
    "unclean.leader.election.enable": r"^(true|false)$",
}


class TenantSerializer(serializers.ModelSerializer):
    plan = serializers.SlugRelatedField(slug_field="slug", queryset=Plan.objects.all())

    class Meta:
        model = Tenant
        fields = ["slug", "name", "plan", "status", "created_at"]
        read_only_fields = ["created_at"]


class PlanSerializer(serializers.ModelSerializer):
    class Meta:
        model = Plan
        fields = ["slug", "name", "producer_byte_rate", "consumer_byte_rate", "request_percentage",
                  "max_partitions", "replication_factor", "acl_admin", "prices"]


class PrincipalSerializer(serializers.ModelSerializer):
    kafka_user = serializers.CharField(read_only=True)

    class Meta:
        model = Principal
        fields = ["name", "kind", "role", "description", "kafka_user", "created_at"]
        read_only_fields = ["kind", "role", "created_at"]


class ApiKeySerializer(serializers.ModelSerializer):
    principal = serializers.CharField(source="principal.name")

    class Meta:
        model = ApiKey
        fields = ["key", "principal", "description", "created_at"]
        read_only_fields = ["key", "created_at"]


class ApiKeyCreatedSerializer(ApiKeySerializer):
    """The answer to a create: the only time the secret is ever shown."""

    secret = serializers.CharField(read_only=True)
    sasl_username = serializers.CharField(source="key", read_only=True)

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "secret", "sasl_username"]


class ClientIdSerializer(serializers.ModelSerializer):
    class Meta:
        model = ClientId
        fields = ["client_id", "description", "created_at"]
        read_only_fields = ["created_at"]


class TopicSerializer(serializers.ModelSerializer):
    configs = serializers.DictField(child=serializers.CharField(), required=False, default=dict)
    physical_name = serializers.CharField(read_only=True)
    assignment = serializers.JSONField(read_only=True)

    class Meta:
        model = Topic
        fields = ["name", "topic_id", "partitions", "replication_factor", "configs", "physical_name",
                  "assignment", "created_at"]
        read_only_fields = ["topic_id", "created_at"]
        extra_kwargs = {"replication_factor": {"required": False}}

    def validate_configs(self, configs: dict[str, str]) -> dict[str, str]:
        errors = {}
        for key, value in configs.items():
            pattern = TOPIC_CONFIGS.get(key)
            if pattern is None:
                errors[key] = f"unknown or not settable topic config; settable: {', '.join(TOPIC_CONFIGS)}"
            elif not re.match(pattern, value):
                errors[key] = f"invalid value {value!r}"
        if errors:
            raise serializers.ValidationError(errors)
        return configs


class TopicUpdateSerializer(serializers.Serializer):
    """PATCH: new configs (replacing all), more partitions (CreatePartitions), or both."""

    configs = serializers.DictField(child=serializers.CharField(), required=False)
    partitions = serializers.IntegerField(min_value=1, max_value=1000, required=False)

    def validate_configs(self, configs: dict[str, str]) -> dict[str, str]:
        return TopicSerializer().validate_configs(configs)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("set configs, partitions, or both")
        return attrs

    def to_representation(self, instance: Any) -> Any:
        return TopicSerializer(instance).data


class AclSerializer(serializers.ModelSerializer):
    principal = serializers.CharField(source="principal.name")
    resource_name = serializers.RegexField(r"^[^/\x00-\x1f]{0,200}$", allow_blank=True)

    class Meta:
        model = Acl
        fields = ["id", "principal", "resource_type", "pattern_type", "resource_name", "operation",
                  "created_at"]
        read_only_fields = ["id", "created_at"]


class ReassignmentSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = Reassignment
        fields = ["id", "topic", "partition", "replicas", "original_replicas", "throttle", "state",
                  "progress", "created_by", "created_at", "started_at", "finished_at"]
        read_only_fields = fields


class ReassignmentCreateSerializer(serializers.Serializer):
    """A move of one partition; the service checks topic, partition and brokers against ZooKeeper."""

    topic = serializers.CharField(max_length=249, help_text="physical topic name, e.g. acme.orders")
    partition = serializers.IntegerField(min_value=0)
    replicas = serializers.ListField(child=serializers.IntegerField(min_value=0), min_length=1,
                                     max_length=7, help_text="target broker ids; first = preferred leader")
    throttle = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None,
                                        help_text="follower replication throttle while moving, bytes/s")

    def validate_replicas(self, replicas: list[int]) -> list[int]:
        if len(set(replicas)) != len(replicas):
            raise serializers.ValidationError("broker ids must be distinct")
        return replicas


class PartitionStateSerializer(serializers.Serializer):
    """A partition as the controller last wrote it to ZooKeeper."""

    replicas = serializers.ListField(child=serializers.IntegerField(), allow_null=True)
    adding_replicas = serializers.ListField(child=serializers.IntegerField(), source="adding")
    removing_replicas = serializers.ListField(child=serializers.IntegerField(), source="removing")
    isr = serializers.ListField(child=serializers.IntegerField())
    leader = serializers.IntegerField(help_text="-1: no leader")
    leader_epoch = serializers.IntegerField(allow_null=True)
    requested = serializers.ListField(child=serializers.IntegerField(), allow_null=True,
                                      help_text="target while pending in /admin/reassign_partitions")


class ReassignmentDetailSerializer(ReassignmentSerializer):
    live = PartitionStateSerializer(read_only=True, allow_null=True,
                                    help_text="null when ZooKeeper could not be read")

    class Meta(ReassignmentSerializer.Meta):
        fields = [*ReassignmentSerializer.Meta.fields, "live"]
        read_only_fields = fields


class TopicPartitionSerializer(serializers.Serializer):
    topic = serializers.CharField(max_length=249)
    partition = serializers.IntegerField(min_value=0)


class PreferredElectionSerializer(serializers.Serializer):
    partitions = TopicPartitionSerializer(many=True, allow_empty=False)


class ScramMechanismSerializer(serializers.Serializer):
    mechanism = serializers.CharField()
    iterations = serializers.IntegerField(allow_null=True)


class ScramUserSerializer(serializers.Serializer):
    """A SCRAM user made over Kafka (AlterUserScramCredentials): an operator principal."""

    name = serializers.CharField()
    mechanisms = ScramMechanismSerializer(many=True)


class ClusterAclSerializer(serializers.Serializer):
    """One allow rule as the brokers hold it; ``managed``: a row of a tenant's ACLs holds it."""

    pattern_type = serializers.CharField()
    resource_type = serializers.CharField()
    resource_name = serializers.CharField(help_text="cluster-wide name")
    principal = serializers.CharField()
    operation = serializers.CharField()
    host = serializers.CharField()
    managed = serializers.BooleanField()
