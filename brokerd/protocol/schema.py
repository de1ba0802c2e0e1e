"""The message-schema DSL: Kafka's JSON message schemas, restated as Python data.

Each API module under ``messages/`` describes its request and response bodies with
:class:`Field`, :class:`Struct` and :class:`Array` over the primitive types below.  The DSL
carries only facts that change bytes on the wire: a field's name (already snake_case, the key
used in decoded dicts), its type, the versions it is present in, the versions in which it may
be null, its tag when it is a tagged field, and its default.  Nothing here encodes or decodes;
``compiler.py`` turns a schema plus a version into encoder and decoder closures.

Version ranges are written as Kafka writes them: ``"3+"`` (3 and later), ``"2-4"``
(inclusive), ``"1"`` (exactly one) or ``"none"``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from brokerd.protocol.api_keys import ApiKey

#: Largest version number; "N+" ranges are stored as (N, MAX_VERSION).
MAX_VERSION = 0x7FFF


def parse_versions(spec: str) -> tuple[int, int] | None:
    """Parse a Kafka version range; None means "no versions"."""
    if spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def in_versions(version: int, versions: tuple[int, int] | None) -> bool:
    """True when ``version`` lies in a parsed range."""
    return versions is not None and versions[0] <= version <= versions[1]


@dataclass(frozen=True)
class Primitive:
    """A scalar wire type.  ``default`` is Kafka's implicit default for the type."""

    name: str
    default: Any


BOOL = Primitive("bool", False)
INT8 = Primitive("int8", 0)
INT16 = Primitive("int16", 0)
INT32 = Primitive("int32", 0)
INT64 = Primitive("int64", 0)
UINT16 = Primitive("uint16", 0)
FLOAT64 = Primitive("float64", 0.0)
STRING = Primitive("string", "")
BYTES = Primitive("bytes", b"")
UUID = Primitive("uuid", uuid.UUID(int=0))
#: A record-batch blob: decoded as a zero-copy memoryview, encoded as a separate buffer.
RECORDS = Primitive("records", None)


@dataclass(frozen=True, init=False)
class Struct:
    """An ordered group of fields: a message body or one element of an array."""

    fields: tuple[Field, ...]

    def __init__(self, *fields: Field) -> None:
        object.__setattr__(self, "fields", fields)


@dataclass(frozen=True)
class Array:
    """A length-prefixed sequence of one element type (a primitive or a :class:`Struct`)."""

    item: Primitive | Struct


FieldType = Primitive | Struct | Array

#: A field's ``default`` when the schema states none (then :meth:`Field.default_value`
#: derives one, and a strict encoder insists on the key).
NO_DEFAULT: Any = object()


@dataclass(frozen=True)
class Field:
    """One field of a struct.

    ``versions``: where the field is on the wire (or, for tagged fields, may be).
    ``nullable``: versions in which the value may be None.
    ``tag``/``tagged``: the tag number and the versions in which the field is tagged rather
    than positional (Kafka's ``taggedVersions``).
    ``default``: Kafka's explicit default; when omitted, :meth:`default_value` derives one.
    """

    name: str
    type: FieldType
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    tagged: str = "none"
    default: Any = NO_DEFAULT
    version_range: tuple[int, int] | None = field(init=False, repr=False, compare=False)
    nullable_range: tuple[int, int] | None = field(init=False, repr=False, compare=False)
    tagged_range: tuple[int, int] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "version_range", parse_versions(self.versions))
        object.__setattr__(self, "nullable_range", parse_versions(self.nullable))
        object.__setattr__(self, "tagged_range", parse_versions(self.tagged))
        if (self.tag is None) != (self.tagged_range is None):
            raise ValueError(f"field {self.name}: tag and tagged versions go together")

    def default_value(self) -> Any:
        """The value a missing key takes when encoding, and an absent field when decoding.

        An explicit schema default wins; otherwise a field that is nullable in any version
        defaults to None, an array to [], a struct to a dict of its fields' defaults, and a
        primitive to its type's zero.  Mutable defaults are fresh objects on every call.
        """
        if self.default is not NO_DEFAULT:
            return self.default
        if self.nullable_range is not None:
            return None
        if isinstance(self.type, Array):
            return []
        if isinstance(self.type, Struct):
            return {f.name: f.default_value() for f in self.type.fields}
        return self.type.default


@dataclass(frozen=True)
class ApiMessage:
    """One API: its key, the versions this codec supports, and its two bodies.

    ``flexible`` is the first version using compact encodings and tagged fields (KIP-482),
    or None when no supported version is flexible.
    """

    api_key: ApiKey
    min_version: int
    max_version: int
    flexible: int | None
    request: Struct
    response: Struct

    def is_flexible(self, version: int) -> bool:
        return self.flexible is not None and version >= self.flexible


def with_defaults(struct_: Struct, value: dict[str, Any], version: int) -> dict[str, Any]:
    """``value`` with every field ``struct_`` has at ``version`` present: a missing key
    takes its default, nested structs and arrays of structs likewise (for answers built as
    "this error, everything else empty", which a strict encoder would otherwise refuse)."""
    out = dict(value)
    for field_ in struct_.fields:
        if not in_versions(version, field_.version_range):
            continue
        if field_.name not in out:
            out[field_.name] = field_.default_value()
        item, ftype = out[field_.name], field_.type
        if isinstance(ftype, Struct) and isinstance(item, dict):
            out[field_.name] = with_defaults(ftype, item, version)
        elif isinstance(ftype, Array) and isinstance(ftype.item, Struct) and item:
            out[field_.name] = [with_defaults(ftype.item, element, version) for element in item]
    return out
