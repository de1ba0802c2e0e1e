"""Message schemas, one module per API; ``ALL_MESSAGES`` lists every API the codec knows.

Each module was transcribed from Kafka's published JSON message schema of that API: fields
in wire order, Kafka's names in snake_case, version/nullable/tagged ranges and explicit
defaults as Kafka states them.  Ranges are clipped to the versions we support ("0-12" in a
schema whose newest supported version is 10 reads "0+"), and fields that only exist in newer
versions are left out.  To support a newer version: raise ``max_version`` and add the fields
Kafka added, checking every changed range against the JSON schema.
"""

from brokerd.protocol.messages import (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
)
from brokerd.protocol.schema import ApiMessage

ALL_MESSAGES: tuple[ApiMessage, ...] = (
    produce.MESSAGE,
    fetch.MESSAGE,
    list_offsets.MESSAGE,
    metadata.MESSAGE,
    offset_commit.MESSAGE,
    offset_fetch.MESSAGE,
    find_coordinator.MESSAGE,
    join_group.MESSAGE,
    heartbeat.MESSAGE,
    leave_group.MESSAGE,
    sync_group.MESSAGE,
    describe_groups.MESSAGE,
    list_groups.MESSAGE,
    sasl_handshake.MESSAGE,
    api_versions.MESSAGE,
    create_topics.MESSAGE,
    delete_topics.MESSAGE,
    delete_records.MESSAGE,
    init_producer_id.MESSAGE,
    offset_for_leader_epoch.MESSAGE,
    describe_configs.MESSAGE,
    alter_configs.MESSAGE,
    sasl_authenticate.MESSAGE,
    create_partitions.MESSAGE,
    delete_groups.MESSAGE,
    incremental_alter_configs.MESSAGE,
    offset_delete.MESSAGE,
    describe_cluster.MESSAGE,
)
