"""Hypothesis strategies that build message bodies straight from our schemas.

A generated body has every field of the schema: fields on the wire at the chosen version get
random values (None only where the version allows null), the others their defaults - which
is exactly what the decoder returns, so ``decode(encode(body)) == body`` is the property.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from brokerd.protocol.schema import Array, Field, Primitive, Struct, in_versions

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _primitive(ptype: Primitive) -> st.SearchStrategy[Any]:
    name = ptype.name
    if name in _INT_BITS:
        bound = 1 << (_INT_BITS[name] - 1)
        return st.integers(-bound, bound - 1)
    if name == "uint16":
        return st.integers(0, 0xFFFF)
    if name == "bool":
        return st.booleans()
    if name == "float64":
        return st.floats(allow_nan=False)
    if name == "string":
        return st.text(max_size=12)
    if name in ("bytes", "records"):
        return st.binary(max_size=24)
    if name == "uuid":
        return st.uuids()
    raise AssertionError(name)


def value_strategy(ftype: Any, version: int) -> st.SearchStrategy[Any]:
    """Random non-null value of ``ftype`` as it exists at ``version``."""
    if isinstance(ftype, Struct):
        return struct_strategy(ftype, version)
    if isinstance(ftype, Array):
        return st.lists(value_strategy(ftype.item, version), max_size=3)
    return _primitive(ftype)


def _field_strategy(field: Field, version: int) -> st.SearchStrategy[Any]:
    if not in_versions(version, field.version_range):
        return st.just(field.default_value())
    values = value_strategy(field.type, version)
    if in_versions(version, field.nullable_range):
        return st.none() | values
    return values


def struct_strategy(struct: Struct, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({f.name: _field_strategy(f, version) for f in struct.fields})
