"""Framing: request/response headers around the compiled message bodies.

A frame on the wire is ``int32 size`` + header + body.  The functions here take or produce
the part after the size (decoding) or the whole thing (encoding).

Header versions follow Kafka: request header v1 = api_key int16, api_version int16,
correlation_id int32, client_id nullable STRING (never compact, even in v2); v2 adds a
tagged-field section and is used by flexible versions.  (Header v0, without client_id, is
only used by ControlledShutdown v0, an API this broker does not serve.)  Response header
v0 = correlation_id int32; v1 adds tagged fields and is used by flexible versions - except
ApiVersions, whose response header is always v0 so a client can parse the answer before it
knows which versions the broker speaks.

Fetch v12, the replicated path's most frequent request, is read and written by the
hand-written :mod:`~brokerd.protocol.fetch_v12` when it has the usual shape, and the
controller's LeaderAndIsr v5 pushes (thousands of states each) are read by
:mod:`~brokerd.protocol.leader_and_isr_v5`, both with exactly the generic codec's result;
anything else goes through the generic codec.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from brokerd.protocol import fetch_v12, leader_and_isr_v5
from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.compiler import (
    STRICT_ENCODING,
    Decoder,
    Encoder,
    Writer,
    buffer_size,
    compile_struct,
)
from brokerd.protocol.errors import ProtocolError, UnsupportedVersionError
from brokerd.protocol.messages import ALL_MESSAGES
from brokerd.protocol.primitives import (
    INT32,
    byte_view,
    read_length,
    skip_tagged_fields,
    write_length,
)
from brokerd.protocol.schema import ApiMessage, with_defaults

_REQUEST_HEADER = struct.Struct(">hhi")

_MESSAGES: dict[int, ApiMessage] = {m.api_key: m for m in ALL_MESSAGES}

#: The versions the codec knows, per API.
SCHEMA_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    m.api_key: (m.min_version, m.max_version) for m in ALL_MESSAGES
}

#: Errors the compiled closures raise on bad input or bad values, all turned into
#: ProtocolError at this boundary so callers catch one type.
_CODEC_FAILURES = (struct.error, UnicodeError, ValueError, TypeError, AttributeError, IndexError)


@dataclass(slots=True)
class RequestHeader:
    """The request header fields the broker needs (tagged header fields are skipped)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


class _VersionCodec(NamedTuple):
    flexible: bool
    decode_request: Decoder
    encode_request: Encoder
    decode_response: Decoder
    encode_response: Encoder


_compiled: dict[tuple[int, int], _VersionCodec] = {}


def _codec(api_key: int, api_version: int) -> _VersionCodec | None:
    """The compiled codec for one (api, version), compiled on first use and cached."""
    codec = _compiled.get((api_key, api_version))
    if codec is None:
        message = _MESSAGES.get(api_key)
        if message is None or not message.min_version <= api_version <= message.max_version:
            return None
        flexible = message.is_flexible(api_version)
        codec = _VersionCodec(
            flexible,
            *compile_struct(message.request, api_version, flexible),
            *compile_struct(message.response, api_version, flexible, STRICT_ENCODING),
        )
        _compiled[(api_key, api_version)] = codec
    return codec


def _response_header_flexible(api_key: int, codec: _VersionCodec) -> bool:
    return codec.flexible and api_key != ApiKey.API_VERSIONS


# Modules whose ``decode_request_body`` reads a request by hand when it has the usual
# shape (None: the generic decoder reads it).
_HAND_WRITTEN_DECODERS = {
    (ApiKey.FETCH, fetch_v12.VERSION): fetch_v12,
    (ApiKey.LEADER_AND_ISR, leader_and_isr_v5.VERSION): leader_and_isr_v5,
}


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, dict[str, Any]]:
    """Decode one request frame (the bytes after the size prefix).

    Raises :class:`UnsupportedVersionError` (with the header fields) for an unknown api key or
    version, :class:`ProtocolError` for anything malformed.  ``records`` fields in the body are
    memoryview slices of ``frame``: keep ``frame`` alive while they are used.  Bytes after the
    body are ignored, as a newer client's extra fields would be.
    """
    buf = byte_view(frame)
    if len(buf) < _REQUEST_HEADER.size:
        raise ProtocolError(f"request frame of {len(buf)} bytes is shorter than a header")
    api_key, api_version, correlation_id = _REQUEST_HEADER.unpack_from(buf, 0)
    try:
        client_id, pos = _read_client_id(buf, _REQUEST_HEADER.size)
    except ProtocolError:
        client_id, pos = None, -1
    codec = _codec(api_key, api_version)
    if codec is None:
        raise UnsupportedVersionError(api_key, api_version, correlation_id, client_id)
    if pos < 0:
        raise ProtocolError("truncated client_id in request header")
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    try:
        if codec.flexible:
            pos = skip_tagged_fields(buf, pos)
        by_hand = _HAND_WRITTEN_DECODERS.get((api_key, api_version))
        body = by_hand.decode_request_body(buf, pos) if by_hand is not None else None
        if body is None:
            body, _ = codec.decode_request(buf, pos)
    except _CODEC_FAILURES as exc:
        what = f"{_api_name(api_key)} v{api_version} request"
        raise ProtocolError(f"malformed {what}: {exc}") from exc
    return header, body


def response_with_defaults(api_key: int, api_version: int, body: dict[str, Any]
                           ) -> dict[str, Any]:
    """``body`` completed with the schema's defaults for this version (see
    :func:`~brokerd.protocol.schema.with_defaults`)."""
    return with_defaults(_MESSAGES[api_key].response, body, api_version)


def encode_response(header: RequestHeader, body: Mapping[str, Any]) -> list[Any]:
    """Encode a response to ``header``'s request as a list of buffers, size prefix included.

    The parts are bytearrays produced here plus, unchanged, any records object given in the
    body that is large or not bytes-like (e.g. a file region with ``nbytes``), ready for
    ``writelines``/``sendfile``.  The first part starts with the int32 total size.
    """
    codec = _require_codec(header.api_key, header.api_version)
    if header.api_key == ApiKey.FETCH and header.api_version == fetch_v12.VERSION:
        try:
            parts = fetch_v12.encode_response(header.correlation_id, body)
        except _CODEC_FAILURES:
            parts = None  # the generic encoder names what is wrong
        if parts is not None:
            return parts
    writer = Writer(b"\0\0\0\0" + INT32.pack(header.correlation_id))
    if _response_header_flexible(header.api_key, codec):
        writer.buf.append(0)
    _encode_body(codec.encode_response, writer, body, header.api_key, header.api_version)
    parts = writer.finish()
    size = sum(buffer_size(part) for part in parts) - 4
    INT32.pack_into(parts[0], 0, size)
    return parts


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: Mapping[str, Any],
) -> bytes:
    """Encode a whole request frame, size prefix included (records must be bytes-like here)."""
    codec = _require_codec(api_key, api_version)
    writer = Writer(b"\0\0\0\0" + _REQUEST_HEADER.pack(api_key, api_version, correlation_id))
    if client_id is None:
        write_length(writer.buf, -1, False, False)
    else:
        encoded = client_id.encode()
        write_length(writer.buf, len(encoded), False, False)
        writer.buf += encoded
    if codec.flexible:
        writer.buf.append(0)
    _encode_body(codec.encode_request, writer, body, api_key, api_version)
    frame = b"".join(writer.finish())
    return INT32.pack(len(frame) - 4) + frame[4:]


def decode_response(
    api_key: int, api_version: int, frame: bytes | bytearray | memoryview
) -> tuple[int, dict[str, Any]]:
    """Decode a response frame (after the size prefix) to ``(correlation_id, body)``."""
    codec = _require_codec(api_key, api_version)
    buf = byte_view(frame)
    try:
        (correlation_id,) = INT32.unpack_from(buf, 0)
        pos = 4
        if _response_header_flexible(api_key, codec):
            pos = skip_tagged_fields(buf, pos)
        body, _ = codec.decode_response(buf, pos)
    except _CODEC_FAILURES as exc:
        what = f"{_api_name(api_key)} v{api_version} response"
        raise ProtocolError(f"malformed {what}: {exc}") from exc
    return correlation_id, body


def _read_client_id(buf: memoryview, pos: int) -> tuple[str | None, int]:
    length, pos = read_length(buf, pos, False, False)
    if length == -1:
        return None, pos
    end = pos + length
    if length < 0 or end > len(buf):
        raise ProtocolError("client_id overruns the frame")
    try:
        return str(buf[pos:end], "utf-8"), end
    except UnicodeError as exc:
        raise ProtocolError("client_id is not UTF-8") from exc


def _require_codec(api_key: int, api_version: int) -> _VersionCodec:
    codec = _codec(api_key, api_version)
    if codec is None:
        raise UnsupportedVersionError(api_key, api_version, -1)
    return codec


def _encode_body(
    encode: Encoder, writer: Writer, body: Mapping[str, Any], api_key: int, api_version: int
) -> None:
    try:
        encode(writer, body)
    except _CODEC_FAILURES as exc:
        raise ProtocolError(f"cannot encode {_api_name(api_key)} v{api_version}: {exc}") from exc


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api {api_key}"
