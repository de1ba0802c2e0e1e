"""Property: for every API and version, encode -> decode returns the same body."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.protocol import (
    SCHEMA_VERSIONS,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from brokerd.protocol.messages import ALL_MESSAGES

from .strategies import struct_strategy

CASES = [
    (message, version)
    for message in ALL_MESSAGES
    for version in range(message.min_version, message.max_version + 1)
]
IDS = [f"{m.api_key.name}-v{v}" for m, v in CASES]
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_listed_api_has_a_schema() -> None:
    # one schema module per API: none shadows another's key (the count was a stale constant)
    assert len(SCHEMA_VERSIONS) == len(ALL_MESSAGES)
    assert len(CASES) == sum(hi - lo + 1 for lo, hi in SCHEMA_VERSIONS.values())


@pytest.mark.parametrize(("message", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_request_round_trip(message, version, data) -> None:
    body = data.draw(struct_strategy(message.request, version))
    client_id = data.draw(st.none() | st.text(max_size=8))
    frame = encode_request(message.api_key, version, 1234, client_id, body)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, decoded = decode_request(frame[4:])
    assert header == RequestHeader(message.api_key, version, 1234, client_id)
    assert decoded == body


@pytest.mark.parametrize(("message", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_response_round_trip(message, version, data) -> None:
    body = data.draw(struct_strategy(message.response, version))
    header = RequestHeader(message.api_key, version, -77, None)
    frame = b"".join(encode_response(header, body))
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    correlation_id, decoded = decode_response(message.api_key, version, frame[4:])
    assert correlation_id == -77
    assert decoded == body
