"""Cross-check every API version against kafka-python 3.0's independent codec.

kafka-python decodes the bytes we encode and re-encodes them; the bytes must be identical.
That pins field order, widths, nullability, compact encodings and tagged fields of both
requests and responses, for every version we claim.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.protocol import ApiKey, RequestHeader, decode_request, encode_request, encode_response
from brokerd.protocol.messages import ALL_MESSAGES

from .strategies import struct_strategy

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.api_message import ApiMessage as KafkaPythonMessage


def _kafka_python_classes() -> dict[tuple[int, bool], Any]:
    """kafka-python's message classes keyed by (api_key, is_request)."""
    found: dict[tuple[int, bool], Any] = {}
    modules = [importlib.import_module("kafka.protocol.sasl")]
    for package in ("metadata", "producer", "consumer", "admin"):
        parent = importlib.import_module(f"kafka.protocol.{package}")
        for info in pkgutil.iter_modules(parent.__path__):
            modules.append(importlib.import_module(f"{parent.__name__}.{info.name}"))
    for module in modules:
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, KafkaPythonMessage)
                and getattr(value, "_json", None) is not None
            ):
                message_class: Any = value  # kafka-python is untyped
                found[(message_class.API_KEY, message_class.is_request())] = value
    return found


with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    KAFKA_PYTHON = _kafka_python_classes()

# APIs kafka-python has no codec for (the KIP-848 group APIs) are checked against kio only
# (test_kafka_schemas.py).
CASES = [
    (message, version)
    for message in ALL_MESSAGES
    if (message.api_key, True) in KAFKA_PYTHON
    for version in range(message.min_version, message.max_version + 1)
]
IDS = [f"{m.api_key.name}-v{v}" for m, v in CASES]
SETTINGS = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("message", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_requests_match_kafka_python(message, version, data) -> None:
    body = data.draw(struct_strategy(message.request, version))
    frame = encode_request(message.api_key, version, 42, "client", body)
    theirs = KAFKA_PYTHON[(message.api_key, True)].decode(frame[4:], version=version, header=True)
    assert bytes(theirs.encode(version=version, header=True, framed=True)) == frame


@pytest.mark.parametrize(("message", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_responses_match_kafka_python(message, version, data) -> None:
    body = data.draw(struct_strategy(message.response, version))
    if message.api_key == ApiKey.API_VERSIONS:
        # kafka-python reads any failed ApiVersions answer as v0 (what brokers send for
        # error 35), so only successful answers keep their version.
        body["error_code"] = 0
    frame = b"".join(encode_response(RequestHeader(message.api_key, version, 42, None), body))
    header_size = 4 + 4 + (message.is_flexible(version) and message.api_key != 18)
    theirs = KAFKA_PYTHON[(message.api_key, False)].decode(frame[header_size:], version=version)
    assert bytes(theirs.encode()) == frame[header_size:]


def test_kafka_python_built_metadata_request() -> None:
    cls = KAFKA_PYTHON[(ApiKey.METADATA, True)]
    topic = cls.MetadataRequestTopic
    request = cls[12](topics=[topic(name="orders"), topic(name="audit")])
    request.with_header(correlation_id=99, client_id="kp")
    frame = bytes(request.encode(header=True, framed=True))
    header, body = decode_request(frame[4:])
    assert header == RequestHeader(ApiKey.METADATA, 12, 99, "kp")
    assert [t["name"] for t in body["topics"]] == ["orders", "audit"]
    assert body["allow_auto_topic_creation"] is True
