"""The consumer-group coordinator's view of topics, over the broker's metadata cache.

Names are cluster names (the tenancy layer already mapped the member's topic names), but a
subscription's regular expression is the member's own, written against the names it sees:
it is matched against the tenant's share of the topics, each name as the tenant sees it,
and can therefore never reach another tenant's topics.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from brokerd.groups.consumer.topics import TopicInfo, regex_matches

if TYPE_CHECKING:
    from brokerd.security import TenantNamespace
    from brokerd.server.metadata_cache import MetadataCache


class CachedTopics:
    """A :class:`~brokerd.groups.consumer.topics.TopicsView` for one request."""

    def __init__(self, cache: MetadataCache, namespace: TenantNamespace | None) -> None:
        self._cache = cache
        self._namespace = namespace

    def by_name(self, name: str) -> TopicInfo | None:
        metadata = self._cache.topic(name)
        if metadata is None or not metadata.replicas:
            return None
        return TopicInfo(metadata.topic_id, len(metadata.replicas))

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        metadata = self._cache.topic_by_id(topic_id)
        return None if metadata is None else metadata.name

    def matching(self, pattern: str) -> frozenset[str]:
        names = list(self._cache.topics)
        if self._namespace is None or self._namespace.is_operator:
            return regex_matches(pattern, names)
        visible = self._namespace.visible(names)  # cluster name -> tenant's name
        local = regex_matches(pattern, visible.values())
        return frozenset(cluster for cluster, name in visible.items() if name in local)
