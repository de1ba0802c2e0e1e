"""Fetch (api key 1), versions 0-12."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("cluster_id", STRING, "12+", nullable="12+", tag=0, tagged="12+"),
    Field("replica_id", INT32, default=-1),
    Field("max_wait_ms", INT32),
    Field("min_bytes", INT32),
    Field("max_bytes", INT32, "3+", default=2147483647),
    Field("isolation_level", INT8, "4+"),
    Field("session_id", INT32, "7+"),
    Field("session_epoch", INT32, "7+", default=-1),
    Field("topics", Array(Struct(
        Field("topic", STRING),
        Field("partitions", Array(Struct(
            Field("partition", INT32),
            Field("current_leader_epoch", INT32, "9+", default=-1),
            Field("fetch_offset", INT64),
            Field("last_fetched_epoch", INT32, "12+", default=-1),
            Field("log_start_offset", INT64, "5+", default=-1),
            Field("partition_max_bytes", INT32),
        ))),
    ))),
    Field("forgotten_topics_data", Array(Struct(
        Field("topic", STRING, "7+"),
        Field("partitions", Array(INT32), "7+"),
    )), "7+"),
    Field("rack_id", STRING, "11+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16, "7+"),
    Field("session_id", INT32, "7+"),
    Field("responses", Array(Struct(
        Field("topic", STRING),
        Field("partitions", Array(Struct(
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("high_watermark", INT64),
            Field("last_stable_offset", INT64, "4+", default=-1),
            Field("log_start_offset", INT64, "5+", default=-1),
            Field("diverging_epoch", Struct(
                Field("epoch", INT32, "12+", default=-1),
                Field("end_offset", INT64, "12+", default=-1),
            ), "12+", tag=0, tagged="12+"),
            Field("current_leader", Struct(
                Field("leader_id", INT32, "12+", default=-1),
                Field("leader_epoch", INT32, "12+", default=-1),
            ), "12+", tag=1, tagged="12+"),
            Field("snapshot_id", Struct(
                Field("end_offset", INT64, default=-1),
                Field("epoch", INT32, default=-1),
            ), "12+", tag=2, tagged="12+"),
            Field("aborted_transactions", Array(Struct(
                Field("producer_id", INT64, "4+"),
                Field("first_offset", INT64, "4+"),
            )), "4+", nullable="4+"),
            Field("preferred_read_replica", INT32, "11+", default=-1),
            Field("records", RECORDS, nullable="0+"),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.FETCH, 0, 12, 12, REQUEST, RESPONSE)
