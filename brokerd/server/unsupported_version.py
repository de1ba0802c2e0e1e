"""The answer to a request at a version this broker does not serve (KIP-896's floor).

Kafka 4.0 removed the protocol versions older than Kafka 2.1's (KIP-896); a client that
sends one gets UNSUPPORTED_VERSION in that version's own response, the way Kafka's
``AbstractRequest.getErrorResponse`` builds it: the error on every entry the request named
(each partition of a Produce, each topic of a CreateTopics, ...) plus the top-level error
code where the version has one.  The codec still knows these old layouts for exactly this
purpose; no handler ever sees such a request.

Pure: request body in, response body out (the dispatcher completes defaults and encodes).
``None`` means the version has no way to carry the error (the caller closes the connection).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.protocol.messages import ALL_MESSAGES
from brokerd.protocol.schema import Struct, in_versions

Body = dict[str, Any]
ERROR = int(ErrorCode.UNSUPPORTED_VERSION)
MESSAGE = "this API version is below the broker's minimum (KIP-896); upgrade the client"


def _produce(body: Body) -> Body:
    return {"responses": [
        {"name": topic["name"], "partition_responses": [
            {"index": part["index"], "error_code": ERROR, "base_offset": -1}
            for part in topic["partition_data"]]}
        for topic in body.get("topic_data") or ()]}


def _fetch(body: Body) -> Body:
    return {"error_code": ERROR, "responses": [
        {"topic": topic["topic"], "partitions": [
            {"partition_index": part["partition"], "error_code": ERROR, "high_watermark": -1,
             "records": None} for part in topic["partitions"]]}
        for topic in body.get("topics") or ()]}


def _list_offsets(body: Body) -> Body:
    return {"topics": [
        {"name": topic["name"], "partitions": [
            {"partition_index": part["partition_index"], "error_code": ERROR,
             "old_style_offsets": []} for part in topic["partitions"]]}
        for topic in body.get("topics") or ()]}


def _offset_commit(body: Body) -> Body:
    return {"topics": [
        {"name": topic["name"], "partitions": [
            {"partition_index": part["partition_index"], "error_code": ERROR}
            for part in topic["partitions"]]}
        for topic in body.get("topics") or ()]}


def _offset_fetch(body: Body) -> Body:
    return {"error_code": ERROR, "topics": [
        {"name": topic["name"], "partitions": [
            {"partition_index": index, "committed_offset": -1, "metadata": "",
             "error_code": ERROR} for index in topic["partition_indexes"]]}
        for topic in body.get("topics") or ()]}


def _create_topics(body: Body) -> Body:
    return {"topics": [{"name": topic["name"], "error_code": ERROR, "error_message": MESSAGE}
                       for topic in body.get("topics") or ()]}


def _delete_topics(body: Body) -> Body:
    return {"responses": [{"name": name, "error_code": ERROR}
                          for name in body.get("topic_names") or ()]}


def _describe_configs(body: Body) -> Body:
    return {"results": [
        {"error_code": ERROR, "error_message": MESSAGE, "resource_type": resource["resource_type"],
         "resource_name": resource["resource_name"], "configs": []}
        for resource in body.get("resources") or ()]}


def _offset_for_leader_epoch(body: Body) -> Body:
    return {"topics": [
        {"topic": topic["topic"], "partitions": [
            {"error_code": ERROR, "partition": part["partition"], "end_offset": -1}
            for part in topic["partitions"]]}
        for topic in body.get("topics") or ()]}


def _write_txn_markers(body: Body) -> Body:
    return {"markers": [
        {"producer_id": marker["producer_id"], "topics": [
            {"name": topic["name"], "partitions": [
                {"partition_index": index, "error_code": ERROR}
                for index in topic["partition_indexes"]]}
            for topic in marker["topics"]]}
        for marker in body.get("markers") or ()]}


# The APIs whose codec range reaches below the served floor, each answered entry by entry.
_PER_ENTRY: dict[int, Callable[[Body], Body]] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.WRITE_TXN_MARKERS: _write_txn_markers,
}
_RESPONSES: dict[int, Struct] = {message.api_key: message.response for message in ALL_MESSAGES}


def error_response(api_key: int, version: int, body: Body) -> Body | None:
    """UNSUPPORTED_VERSION for every entry of ``body`` (an ``api_key`` v``version`` request),
    or None when that version's response has nowhere to put it."""
    build = _PER_ENTRY.get(api_key)
    if build is not None:
        return build(body)
    response = _RESPONSES.get(api_key)
    if response is None:
        return None
    top_level = any(field.name == "error_code" and in_versions(version, field.version_range)
                    for field in response.fields)
    return {"error_code": ERROR} if top_level else None
