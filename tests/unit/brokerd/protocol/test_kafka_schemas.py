"""Every message schema we transcribed agrees with an independent description of Kafka's.

The reference is ``kio`` (installed from the package registry, a dev dependency): Python
dataclasses generated from Kafka's own JSON message definitions, one module per API and
version.  For every API in ``ALL_MESSAGES`` and every version both sides define, the
request and response must match field by field, recursively: positional fields in wire
order with their type and nullability, tagged fields by tag.  We verify instead of
generating so the codec keeps its compiled closures (its speed is unchanged) and a
transcription slip fails here with the path of the field.

kio's modelling differs in documented ways, which the comparison allows for: a duration or
timestamp field drops Kafka's ``Ms`` suffix (``throttle_time`` for ``throttle_time_ms``) and
reads its -1 sentinel as None, and a UUID reads the zero UUID as None; neither sentinel is
a null on the wire, so their nullability is not compared.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import typing
from collections.abc import Iterator
from types import ModuleType, UnionType
from typing import Any

import pytest

from brokerd.protocol import ApiKey
from brokerd.protocol.messages import ALL_MESSAGES
from brokerd.protocol.schema import ApiMessage, Array, Field, Primitive, Struct, in_versions

# kio's ``kafka_type`` names for what our primitives call them.
KIO_TYPES = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64",
             "datetime_i64": "int64"}
TIME_TYPES = {"timedelta_i32", "timedelta_i64", "datetime_i64"}


def kio_module(message: ApiMessage) -> ModuleType:
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", "".join(
        part.capitalize() for part in message.api_key.name.split("_"))).lower()
    return importlib.import_module(f"kio.schema.{snake}")


# APIs Kafka 4.0 removed with ZooKeeper mode, so kio (generated from 4.x) does not describe
# them; served here for the ZooKeeper-mode controller (transcribed from Kafka 3.x).
REMOVED_IN_KAFKA_4 = {ApiKey.LEADER_AND_ISR}


def kio_class(message: ApiMessage, version: int, side: str) -> type | None:
    if message.api_key in REMOVED_IN_KAFKA_4:
        return None
    base = kio_module(message).__name__
    try:
        module = importlib.import_module(f"{base}.v{version}.{side}")
    except ModuleNotFoundError:
        return None
    suffix = side.capitalize()
    return next(obj for name, obj in vars(module).items()
                if isinstance(obj, type) and dataclasses.is_dataclass(obj)
                and name.endswith(suffix) and obj.__module__ == module.__name__
                and getattr(getattr(obj, "__type__", None), "name", "") == side)


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(type without ``| None``, whether None was allowed)."""
    if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0], True
    return annotation, False


def _kind(kio_field: dataclasses.Field[Any]) -> tuple[str, Any, bool]:
    """("struct"|"array"|"primitive", inner type or kafka type name, nullable)."""
    annotation, nullable = _unwrap(kio_field.type)
    kafka_type = kio_field.metadata.get("kafka_type")
    if typing.get_origin(annotation) is tuple:
        item = typing.get_args(annotation)[0]
        return "array", (KIO_TYPES.get(kafka_type, kafka_type) if kafka_type else item), nullable
    if kafka_type is None:
        return "struct", annotation, nullable
    return "primitive", KIO_TYPES.get(kafka_type, kafka_type), nullable


def _same_name(ours: str, kio_field: dataclasses.Field[Any]) -> bool:
    if ours == kio_field.name:
        return True
    return (kio_field.metadata.get("kafka_type") in TIME_TYPES
            and ours.removesuffix("_ms") == kio_field.name)


def differences(ours: Struct, theirs: type, version: int, flexible: bool, path: str
                ) -> Iterator[str]:
    """Each way ``ours`` at ``version`` differs from kio's dataclass ``theirs``."""
    present = [f for f in ours.fields if in_versions(version, f.version_range)]
    tagged = {f.tag: f for f in present
              if f.tag is not None and flexible and in_versions(version, f.tagged_range)}
    positional = [f for f in present if f not in tagged.values()]
    kio_fields = dataclasses.fields(theirs)
    kio_tagged = {f.metadata["tag"]: f for f in kio_fields if "tag" in f.metadata}
    kio_positional = [f for f in kio_fields if "tag" not in f.metadata]
    ours_names = [f.name for f in positional]
    if len(positional) != len(kio_positional) or not all(
            _same_name(a.name, b) for a, b in zip(positional, kio_positional, strict=True)):
        yield (f"{path}: positional fields {ours_names} != kio's "
               f"{[f.name for f in kio_positional]}")
        return
    if set(tagged) != set(kio_tagged):
        yield f"{path}: tags {sorted(tagged)} != kio's {sorted(kio_tagged)}"
    pairs = list(zip(positional, kio_positional, strict=True)) + [
        (tagged[tag], kio_tagged[tag]) for tag in sorted(set(tagged) & set(kio_tagged))]
    for field, kio_field in pairs:
        yield from _field_differences(field, kio_field, version, flexible,
                                      f"{path}.{field.name}")


def _field_differences(field: Field, kio_field: dataclasses.Field[Any], version: int,
                       flexible: bool, path: str) -> Iterator[str]:
    if not _same_name(field.name, kio_field):
        yield f"{path}: named {kio_field.name} in kio"
    kind, inner, kio_nullable = _kind(kio_field)
    nullable = in_versions(version, field.nullable_range)
    sentinel = kio_field.metadata.get("kafka_type") in TIME_TYPES | {"uuid"}
    if nullable != kio_nullable and not sentinel:
        yield f"{path}: nullable {nullable}, kio {kio_nullable}"
    ftype = field.type
    if kind == "struct":
        if not isinstance(ftype, Struct):
            yield f"{path}: kio has a struct"
        else:
            yield from differences(ftype, inner, version, flexible, path)
    elif kind == "array":
        if not isinstance(ftype, Array):
            yield f"{path}: kio has an array"
        elif isinstance(inner, str):
            if not isinstance(ftype.item, Primitive) or ftype.item.name != inner:
                yield f"{path}: array of {ftype.item}, kio of {inner}"
        elif not isinstance(ftype.item, Struct):
            yield f"{path}: kio has an array of structs"
        else:
            yield from differences(ftype.item, inner, version, flexible, f"{path}[]")
    elif not isinstance(ftype, Primitive) or ftype.name != inner:
        yield f"{path}: type {getattr(ftype, 'name', ftype)}, kio {inner}"


def cases() -> Iterator[Any]:
    """Every (API, version) kio describes: it starts at Kafka 4.0's floor, so older versions
    we still decode have no reference (the newest of each is always checked, below)."""
    for message in ALL_MESSAGES:
        for version in range(message.min_version, message.max_version + 1):
            if kio_class(message, version, "request") is not None:
                yield pytest.param(message, version, id=f"{message.api_key.name}-v{version}")


@pytest.mark.parametrize(("message", "version"), list(cases()))
def test_schema_matches_kafkas(message: ApiMessage, version: int) -> None:
    flexible = message.is_flexible(version)
    problems: list[str] = []
    for side, struct_ in (("request", message.request), ("response", message.response)):
        theirs = kio_class(message, version, side)
        assert theirs is not None, f"kio has a v{version} request but no {side}"
        problems.extend(differences(struct_, theirs, version, flexible, side))
    assert not problems, "\n".join(problems)


def test_every_served_api_is_checked_at_its_newest_version() -> None:
    """kio starts at Kafka 4.0's floor, so old versions may go unchecked; the newest
    version of every API the broker serves, where new fields arrive, never may."""
    from brokerd.server.handlers import API_TABLE

    messages = {message.api_key: message for message in ALL_MESSAGES}
    unchecked = [entry.name for entry in API_TABLE.values()
                 if kio_class(messages[entry.api_key], entry.max_version, "request") is None
                 and entry.api_key not in REMOVED_IN_KAFKA_4]
    assert unchecked == []


def test_api_key_numbers_are_kafkas() -> None:
    """Every API key kio describes has our enum's number under the same name."""
    import pkgutil

    import kio.schema

    wrong, compared = [], 0
    for info in pkgutil.iter_modules(kio.schema.__path__):
        package = importlib.import_module(f"kio.schema.{info.name}")
        versions = [v.name for v in pkgutil.iter_modules(getattr(package, "__path__", []))
                    if re.fullmatch(r"v\d+", v.name)]
        try:
            request = importlib.import_module(f"{package.__name__}.{versions[0]}.request")
        except (IndexError, ModuleNotFoundError):
            continue  # not an API (a record or header schema)
        compared += 1
        number = next(int(obj.__api_key__) for obj in vars(request).values()
                      if getattr(getattr(obj, "__type__", None), "name", "") == "request")
        ours = ApiKey.__members__.get(info.name.upper())
        if ours is None or int(ours) != number:
            wrong.append(f"{info.name}: kio {number}, ours {ours!r}")
    assert wrong == [] and compared > 80
