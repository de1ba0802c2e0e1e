"""Kafka's config resource types (``ConfigResource.Type``): the ``resource_type`` of
DescribeConfigs, AlterConfigs and IncrementalAlterConfigs resources."""

TOPIC_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER_RESOURCE = 2, 4, 8
