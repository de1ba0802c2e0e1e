"""Compile a schema :class:`~brokerd.protocol.schema.Struct` for one version into closures.

Interpreting the schema for every message would re-decide, per field and per message, whether
the field exists in this version, whether it is nullable, compact or tagged.  Instead each
(struct, version) is compiled once into a flat list of steps with those decisions baked in:

- consecutive fixed-width fields (bool, int8..int64, uint16, float64) collapse into ONE
  ``struct.Struct`` so e.g. a Fetch partition header is a single ``unpack_from``/``pack``;
- arrays of fixed-width primitives are read and written with one ``struct`` call;
- fields absent from the version are not on the wire: decoding fills in their defaults (so
  handlers can read any field of any version), encoding ignores them;
- in flexible versions every struct ends with a tagged-field section; known tags decode by
  name, unknown ones are skipped, and only values differing from the default are written.

Decoders have the shape ``(buf, pos) -> (value, new_pos)`` over a memoryview; encoders
``(writer, value) -> None`` append to a :class:`Writer`.  Decoders may raise ``struct.error``
on truncation; the framing layer turns that into :class:`ProtocolError`.

Strict encoders (``strict=True``; the codec compiles the broker's response encoders so
when ``BROKERD_STRICT_ENCODING=1`` is in the environment, which the test suite sets for
itself and every broker it starts) refuse a dict with a key that is no field of its struct
in any version (a misspelled key would otherwise silently send the default) and one
lacking a positional field of this version that has no explicit schema default.
Production leaves it off: the check costs a set difference per struct.
"""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Callable
from typing import Any

from brokerd.protocol.errors import ProtocolError
from brokerd.protocol.primitives import (
    check_room,
    read_length,
    read_uvarint,
    write_length,
    write_uvarint,
)
from brokerd.protocol.schema import NO_DEFAULT as _NO_DEFAULT
from brokerd.protocol.schema import Array, Field, Primitive, Struct, in_versions

Decoder = Callable[[memoryview, int], tuple[Any, int]]
Encoder = Callable[["Writer", Any], None]

#: struct format codes of the fixed-width primitives.
_FIXED_CODES = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "float64": "d",
}

#: Records blobs smaller than this are copied into the output buffer: one extra small write
#: costs more than the copy.  Larger ones (and file regions) travel as their own buffer.
INLINE_RECORDS_LIMIT = 4096

_BYTES_LIKE = (bytes, bytearray, memoryview)

#: Whether the broker's response encoders check their dicts' keys (see the module
#: docstring); read once, at import.
STRICT_ENCODING = os.environ.get("BROKERD_STRICT_ENCODING", "") == "1"


class Writer:
    """Output accumulator: a growing bytearray, split wherever a records buffer is placed.

    ``finish()`` returns the ordered parts; records objects appear in it unchanged, so the
    server can hand a file region to ``sendfile`` without copying it through Python.
    """

    __slots__ = ("buf", "parts")

    def __init__(self, prefix: bytes = b"") -> None:
        self.buf = bytearray(prefix)
        self.parts: list[Any] = []

    def add_buffer(self, obj: Any) -> None:
        self.parts.append(self.buf)
        self.parts.append(obj)
        self.buf = bytearray()

    def finish(self) -> list[Any]:
        if self.buf or not self.parts:
            self.parts.append(self.buf)
        return self.parts


def buffer_size(obj: Any) -> int:
    """Byte size of an output part: ``nbytes`` when the object has it, else ``len``."""
    nbytes = getattr(obj, "nbytes", None)
    return len(obj) if nbytes is None else int(nbytes)


def compile_struct(struct_: Struct, version: int, flexible: bool, strict: bool = False
                   ) -> tuple[Decoder, Encoder]:
    """Compile ``struct_`` as it is on the wire at ``version`` (``strict``: the encoder
    checks its dicts' keys, nested structs included)."""
    dec_steps: list[Callable[[memoryview, int, dict[str, Any]], int]] = []
    enc_steps: list[Callable[[Writer, dict[str, Any]], None]] = []
    constant_defaults: dict[str, Any] = {}
    mutable_defaults: list[Field] = []
    tagged: list[tuple[int, Field, Decoder, Encoder]] = []
    fixed_run: list[tuple[str, str, Any]] = []  # (name, struct code, default)

    def flush_fixed_run() -> None:
        if fixed_run:
            dec_steps.append(_fixed_run_decoder(fixed_run))
            enc_steps.append(_fixed_run_encoder(fixed_run))
            fixed_run.clear()

    for field in struct_.fields:
        present = in_versions(version, field.version_range)
        is_tagged = present and flexible and in_versions(version, field.tagged_range)
        if not present or is_tagged:
            default = field.default_value()
            if isinstance(default, (list, dict)):
                mutable_defaults.append(field)
            else:
                constant_defaults[field.name] = default
        if not present:
            continue
        nullable = in_versions(version, field.nullable_range)
        if is_tagged:
            assert field.tag is not None
            decode, encode = _value_codec(field.type, version, flexible, nullable, strict)
            tagged.append((field.tag, field, decode, encode))
        elif isinstance(field.type, Primitive) and field.type.name in _FIXED_CODES:
            fixed_run.append((field.name, _FIXED_CODES[field.type.name], field.default_value()))
        else:
            flush_fixed_run()
            decode, encode = _value_codec(field.type, version, flexible, nullable, strict)
            dec_steps.append(_field_decoder(field.name, decode))
            enc_steps.append(_field_encoder(field.name, field.default_value(), encode))
    flush_fixed_run()
    tagged.sort(key=lambda item: item[0])
    encoder = _struct_encoder(enc_steps, tagged, flexible)
    return (
        _struct_decoder(dec_steps, constant_defaults, mutable_defaults, tagged, flexible),
        _checked_encoder(struct_, version, flexible, encoder) if strict else encoder,
    )


def _checked_encoder(struct_: Struct, version: int, flexible: bool, encode: Encoder) -> Encoder:
    """``encode`` behind the strict key check (see the module docstring)."""
    known = frozenset(field.name for field in struct_.fields)
    required = tuple(
        field.name for field in struct_.fields
        if field.default is _NO_DEFAULT and in_versions(version, field.version_range)
        and not (flexible and in_versions(version, field.tagged_range)))

    def checked(w: Writer, value: dict[str, Any]) -> None:
        unknown = value.keys() - known
        missing = [name for name in required if name not in value]
        if unknown or missing:
            raise ProtocolError(f"encoding v{version} of a struct with fields "
                                f"{sorted(known)}: unknown keys {sorted(unknown)}, "
                                f"missing keys {missing}")
        encode(w, value)

    return checked


def _struct_decoder(
    steps: list[Callable[[memoryview, int, dict[str, Any]], int]],
    constant_defaults: dict[str, Any],
    mutable_defaults: list[Field],
    tagged: list[tuple[int, Field, Decoder, Encoder]],
    flexible: bool,
) -> Decoder:
    tag_decoders = {tag: (field.name, decode) for tag, field, decode, _ in tagged}

    def decode(buf: memoryview, pos: int) -> tuple[dict[str, Any], int]:
        out = constant_defaults.copy()
        for field in mutable_defaults:
            out[field.name] = field.default_value()
        for step in steps:
            pos = step(buf, pos, out)
        if flexible:
            count, pos = read_uvarint(buf, pos)
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                end = check_room(buf, pos, size)
                known = tag_decoders.get(tag)
                if known is not None:
                    # Decode inside the tag's own bytes so a lying size cannot read past it.
                    out[known[0]], _ = known[1](buf[:end], pos)
                pos = end
        return out, pos

    return decode


def _struct_encoder(
    steps: list[Callable[[Writer, dict[str, Any]], None]],
    tagged: list[tuple[int, Field, Decoder, Encoder]],
    flexible: bool,
) -> Encoder:
    tag_encoders = [(tag, field.name, field.default_value(), enc) for tag, field, _, enc in tagged]

    def encode(w: Writer, value: dict[str, Any]) -> None:
        for step in steps:
            step(w, value)
        if not flexible:
            return
        if not tag_encoders:
            w.buf.append(0)
            return
        chosen = []
        for tag, name, default, enc in tag_encoders:
            if name in value and value[name] != default:
                chosen.append((tag, value[name], enc))
        write_uvarint(w.buf, len(chosen))
        for tag, tag_value, enc in chosen:
            inner = Writer()
            enc(inner, tag_value)
            if inner.parts:
                raise ProtocolError("a tagged field cannot hold an out-of-line records buffer")
            write_uvarint(w.buf, tag)
            write_uvarint(w.buf, len(inner.buf))
            w.buf += inner.buf

    return encode


def _field_decoder(
    name: str, decode: Decoder
) -> Callable[[memoryview, int, dict[str, Any]], int]:
    def step(buf: memoryview, pos: int, out: dict[str, Any]) -> int:
        out[name], pos = decode(buf, pos)
        return pos

    return step


def _field_encoder(
    name: str, default: Any, encode: Encoder
) -> Callable[[Writer, dict[str, Any]], None]:
    def step(w: Writer, value: dict[str, Any]) -> None:
        encode(w, value.get(name, default))

    return step


def _fixed_run_decoder(
    fields: list[tuple[str, str, Any]],
) -> Callable[[memoryview, int, dict[str, Any]], int]:
    layout = struct.Struct(">" + "".join(code for _, code, _ in fields))
    names = tuple(name for name, _, _ in fields)
    size = layout.size
    unpack_from = layout.unpack_from

    def step(buf: memoryview, pos: int, out: dict[str, Any]) -> int:
        out.update(zip(names, unpack_from(buf, pos), strict=True))
        return pos + size

    return step


def _fixed_run_encoder(
    fields: list[tuple[str, str, Any]],
) -> Callable[[Writer, dict[str, Any]], None]:
    layout = struct.Struct(">" + "".join(code for _, code, _ in fields))
    pairs = tuple((name, default) for name, _, default in fields)
    pack = layout.pack

    def step(w: Writer, value: dict[str, Any]) -> None:
        w.buf += pack(*[value.get(name, default) for name, default in pairs])

    return step


def _value_codec(
    ftype: Primitive | Struct | Array, version: int, flexible: bool, nullable: bool,
    strict: bool,
) -> tuple[Decoder, Encoder]:
    """Decoder and encoder for one value of ``ftype`` (not a whole field)."""
    if isinstance(ftype, Struct):
        codec = compile_struct(ftype, version, flexible, strict)
        return _nullable_struct_codec(*codec) if nullable else codec
    if isinstance(ftype, Array):
        return _array_codec(ftype, version, flexible, nullable, strict)
    name = ftype.name
    if name in _FIXED_CODES:
        return _fixed_codec(_FIXED_CODES[name])
    if name == "string":
        return _string_codec(flexible, nullable)
    if name in ("bytes", "records"):
        return _bytes_codec(flexible, nullable, records=name == "records")
    if name == "uuid":
        return _decode_uuid, _encode_uuid
    raise AssertionError(f"unknown primitive {name}")


def _nullable_struct_codec(decode: Decoder, encode: Encoder) -> tuple[Decoder, Encoder]:
    """A nullable struct (e.g. ConsumerGroupHeartbeat's assignment) is preceded by an int8
    marker on the wire: -1 for null, 1 for a struct that follows."""

    def decode_nullable(buf: memoryview, pos: int) -> tuple[Any, int]:
        if buf[pos] == 0xFF:
            return None, pos + 1
        return decode(buf, pos + 1)

    def encode_nullable(w: Writer, value: Any) -> None:
        if value is None:
            w.buf += b"\xff"
        else:
            w.buf += b"\x01"
            encode(w, value)

    return decode_nullable, encode_nullable


def _fixed_codec(code: str) -> tuple[Decoder, Encoder]:
    layout = struct.Struct(">" + code)
    size = layout.size

    def decode(buf: memoryview, pos: int) -> tuple[Any, int]:
        return layout.unpack_from(buf, pos)[0], pos + size

    def encode(w: Writer, value: Any) -> None:
        w.buf += layout.pack(value)

    return decode, encode


def _null_check(nullable: bool) -> None:
    if not nullable:
        raise ProtocolError("null value in a non-nullable field")


def _string_codec(flexible: bool, nullable: bool) -> tuple[Decoder, Encoder]:
    def decode(buf: memoryview, pos: int) -> tuple[str | None, int]:
        length, pos = read_length(buf, pos, flexible, False)
        if length == -1:
            _null_check(nullable)
            return None, pos
        end = check_room(buf, pos, length)
        return str(buf[pos:end], "utf-8"), end

    def encode(w: Writer, value: str | None) -> None:
        if value is None:
            # A None where this version has no null is sent as "", which is what the
            # pre-nullable versions meant by "not set".
            write_length(w.buf, -1 if nullable else 0, flexible, False)
            return
        data = value.encode()
        write_length(w.buf, len(data), flexible, False)
        w.buf += data

    return decode, encode


def _bytes_codec(flexible: bool, nullable: bool, records: bool) -> tuple[Decoder, Encoder]:
    """BYTES decode to ``bytes``; RECORDS to a zero-copy memoryview of the frame."""

    def decode(buf: memoryview, pos: int) -> tuple[Any, int]:
        length, pos = read_length(buf, pos, flexible, True)
        if length == -1:
            _null_check(nullable)
            return None, pos
        end = check_room(buf, pos, length)
        return (buf[pos:end] if records else bytes(buf[pos:end])), end

    def encode(w: Writer, value: Any) -> None:
        if value is None:
            write_length(w.buf, -1 if nullable else 0, flexible, True)
            return
        size = buffer_size(value)
        write_length(w.buf, size, flexible, True)
        if records and (size >= INLINE_RECORDS_LIMIT or not isinstance(value, _BYTES_LIKE)):
            w.add_buffer(value)
        else:
            w.buf += value

    return decode, encode


def _decode_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    end = check_room(buf, pos, 16)
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def _encode_uuid(w: Writer, value: uuid.UUID) -> None:
    w.buf += value.bytes


class ReusedArray(list[Any]):
    """An array value whose encoding is kept and reused, one per encoder (the encoder
    stands for an API, a version and the field's place in the message).

    Why: some answers are built again and again from state that changes far less often
    than it is asked for.  After a failover every client asks Metadata for the same
    topics, and encoding a 1,000-partition topic's partitions cost about 2.3 ms each time;
    the handler builds a topic's partitions once per state (see
    ``MetadataCache.derived``) and they are encoded once per version.

    It must not change once built: a change would not reach the kept encodings.  An
    encoding that places an out-of-line records buffer is not kept.
    """

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.encodings: dict[Encoder, bytes] = {}


class ReusedStruct(dict[str, Any]):
    """An array element (a struct) whose encoding is kept and reused, as
    :class:`ReusedArray` keeps a whole array's, with the same rules.

    Why: while a large topic's partitions change a few at a time (a failover changes
    10,000 partitions' states in batches of hundreds), each change makes its answer anew;
    encoding a 10,000-partition topic whole cost 41 ms, and clients ask again after every
    leadership error.  Unchanged partitions keep their element, and with it its bytes."""

    def __init__(self, fields: Any = ()) -> None:
        super().__init__(fields)
        self.encodings: dict[Encoder, bytes] = {}


_REUSED = (ReusedArray, ReusedStruct)


def _reusing(encode: Encoder) -> Encoder:
    """``encode``, taking a :class:`ReusedArray`'s or :class:`ReusedStruct`'s kept
    encoding when it has one."""
    def encode_reused(w: Writer, value: Any) -> None:
        if type(value) not in _REUSED:
            encode(w, value)
            return
        kept = value.encodings.get(encode_reused)
        if kept is None:
            inner = Writer()
            encode(inner, value)
            if inner.parts:  # an out-of-line records buffer: encoded in place, not kept
                encode(w, value)
                return
            kept = value.encodings[encode_reused] = bytes(inner.buf)
        w.buf += kept

    return encode_reused


def _array_codec(
    ftype: Array, version: int, flexible: bool, nullable: bool, strict: bool
) -> tuple[Decoder, Encoder]:
    item = ftype.item
    if isinstance(item, Primitive) and item.name in _FIXED_CODES:
        return _fixed_array_codec(_FIXED_CODES[item.name], flexible, nullable)
    decode_item, encode_item = _value_codec(item, version, flexible, False, strict)
    if isinstance(item, Struct):
        encode_item = _reusing(encode_item)

    def decode(buf: memoryview, pos: int) -> tuple[list[Any] | None, int]:
        count, pos = read_length(buf, pos, flexible, True)
        if count == -1:
            _null_check(nullable)
            return None, pos
        # Every element occupies at least one byte, so a count larger than what is left is a
        # lie; refusing it here keeps a 4-byte frame from driving a 2**31-step loop.
        check_room(buf, pos, count)
        items = []
        for _ in range(count):
            value, pos = decode_item(buf, pos)
            items.append(value)
        return items, pos

    def encode(w: Writer, value: list[Any] | None) -> None:
        if value is None:
            write_length(w.buf, -1 if nullable else 0, flexible, True)
            return
        write_length(w.buf, len(value), flexible, True)
        for element in value:
            encode_item(w, element)

    return decode, _reusing(encode)


def _fixed_array_codec(code: str, flexible: bool, nullable: bool) -> tuple[Decoder, Encoder]:
    width = struct.calcsize(">" + code)

    def decode(buf: memoryview, pos: int) -> tuple[list[Any] | None, int]:
        count, pos = read_length(buf, pos, flexible, True)
        if count == -1:
            _null_check(nullable)
            return None, pos
        if count < 0:
            raise ProtocolError(f"negative array count {count}")
        end = check_room(buf, pos, count * width)
        return list(struct.unpack_from(f">{count}{code}", buf, pos)), end

    def encode(w: Writer, value: list[Any] | None) -> None:
        if value is None:
            write_length(w.buf, -1 if nullable else 0, flexible, True)
            return
        write_length(w.buf, len(value), flexible, True)
        w.buf += struct.pack(f">{len(value)}{code}", *value)

    return decode, encode
