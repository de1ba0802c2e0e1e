"""What the consumer-group coordinator needs to know about topics, and the metadata hash.

The coordinator stays free of I/O: each heartbeat brings a :class:`TopicsView` over the
broker's metadata cache (built by the handler), read only for the topics the group uses.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TopicInfo:
    topic_id: uuid.UUID
    partitions: int


class TopicsView(Protocol):
    def by_name(self, name: str) -> TopicInfo | None: ...

    def name_of(self, topic_id: uuid.UUID) -> str | None: ...

    def matching(self, pattern: str) -> frozenset[str]:
        """Topics whose whole name (as the member sees it) matches ``pattern``."""
        ...


def regex_matches(pattern: str, names: Iterable[str]) -> frozenset[str]:
    """Names the regular expression matches entirely (Kafka matches whole names), internal
    topics (``__``-prefixed) left out as Kafka leaves them out."""
    compiled = re.compile(pattern)
    return frozenset(name for name in names
                     if not name.startswith("__") and compiled.fullmatch(name))


class StaticTopics:
    """A fixed set of topics (tests, and a snapshot of the cache)."""

    def __init__(self, topics: Mapping[str, TopicInfo]) -> None:
        self._by_name = dict(topics)
        self._by_id = {info.topic_id: name for name, info in self._by_name.items()}

    def by_name(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def matching(self, pattern: str) -> frozenset[str]:
        return regex_matches(pattern, self._by_name)


def metadata_hash(names: Iterable[str], topics: TopicsView) -> int:
    """A signed 64-bit digest of the subscribed topics' ids and partition counts.

    Stored with the group epoch (ConsumerGroupMetadataValue's MetadataHash): when it changes
    (partitions added, a topic created or deleted) the group epoch is bumped so the target
    assignment picks the change up without any client action.
    """
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(names):
        info = topics.by_name(name)
        if info is not None:
            digest.update(f"{name}\0{info.topic_id}\0{info.partitions}\n".encode())
    return int.from_bytes(digest.digest(), "big", signed=True)
