"""DescribeConfigs (api key 32), versions 0-4."""

from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    STRING,
    ApiMessage,
    Array,
    Field,
    Struct,
)

REQUEST = Struct(
    Field("resources", Array(Struct(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configuration_keys", Array(STRING), nullable="0+"),
    ))),
    Field("include_synonyms", BOOL, "1+"),
    Field("include_documentation", BOOL, "3+"),
)

RESPONSE = Struct(
    Field("throttle_time_ms", INT32),
    Field("results", Array(Struct(
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", Array(Struct(
            Field("name", STRING),
            Field("value", STRING, nullable="0+"),
            Field("read_only", BOOL),
            Field("config_source", INT8, "1+", default=-1),
            Field("is_default", BOOL, "0"),
            Field("is_sensitive", BOOL),
            Field("synonyms", Array(Struct(
                Field("name", STRING, "1+"),
                Field("value", STRING, "1+", nullable="0+"),
                Field("source", INT8, "1+"),
            )), "1+"),
            Field("config_type", INT8, "3+"),
            Field("documentation", STRING, "3+", nullable="0+"),
        ))),
    ))),
)

MESSAGE = ApiMessage(ApiKey.DESCRIBE_CONFIGS, 0, 4, 4, REQUEST, RESPONSE)
