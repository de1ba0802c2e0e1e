"""Which ``__consumer_offsets`` partition coordinates a group, computed exactly as Kafka does.

Every broker and every client-side tool must agree on the owner of a group, so this follows
Kafka's ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` to the bit.
"""

from __future__ import annotations

#: ``offsets.topic.num.partitions`` default.
DEFAULT_OFFSETS_PARTITIONS = 50

_INT32_MIN = -(2**31)


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``h = 31 * h + unit`` over UTF-16 code units, 32-bit signed.

    Java strings are UTF-16, so a character outside the BMP contributes its two surrogates;
    encoding to UTF-16-BE and reading 2-byte units reproduces that.  The arithmetic wraps
    modulo 2**32 like Java ``int`` overflow; the final step reinterprets the unsigned value as
    two's complement.
    """
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that Integer.MIN_VALUE maps to 0.

    ``Math.abs(Integer.MIN_VALUE)`` overflows back to MIN_VALUE (negative), which would give a
    negative partition; Kafka special-cases it to 0 rather than masking the sign bit, so
    e.g. a hash of -5 yields 5 (not 2**31 - 5).
    """
    return 0 if n == _INT32_MIN else abs(n)


def partition_for(group_id: str, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The offsets partition whose leader coordinates ``group_id``."""
    return kafka_abs(java_string_hash(group_id)) % num_partitions
