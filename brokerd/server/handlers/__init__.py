"""One module per Kafka API; this table is what ApiVersions advertises and dispatch serves.

Each module exposes ``API_KEY``, ``MIN_VERSION``, ``MAX_VERSION`` and
``async def handle(broker, request) -> dict | None`` (None: no response, e.g. acks=0).
A version appears here only when its handler really implements it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey

if TYPE_CHECKING:
    from brokerd.server.broker import Broker
    from brokerd.server.request import Request

Handler = Callable[["Broker", "Request"], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class ApiEntry:
    """One served API: its key, version range and handler."""

    api_key: ApiKey
    min_version: int
    max_version: int
    handle: Handler

    @property
    def name(self) -> str:
        return self.api_key.name.lower()


def _entry(module: ModuleType) -> ApiEntry:
    return ApiEntry(module.API_KEY, module.MIN_VERSION, module.MAX_VERSION, module.handle)


def _build_table() -> dict[int, ApiEntry]:
    from brokerd.server.handlers import (
        api_versions,
        create_partitions,
        create_topics,
        delete_groups,
        delete_records,
        delete_topics,
        describe_cluster,
        describe_configs,
        describe_groups,
        fetch,
        find_coordinator,
        heartbeat,
        incremental_alter_configs,
        init_producer_id,
        join_group,
        leave_group,
        list_groups,
        list_offsets,
        metadata,
        offset_commit,
        offset_delete,
        offset_fetch,
        offset_for_leader_epoch,
        produce,
        sasl_authenticate,
        sasl_handshake,
        sync_group,
    )

    modules = (api_versions, metadata, produce, fetch, list_offsets, create_topics,
               delete_topics, create_partitions, describe_configs, incremental_alter_configs,
               init_producer_id, describe_cluster, delete_records, offset_for_leader_epoch)
    group_modules = (find_coordinator, join_group, sync_group, heartbeat, leave_group,
                     offset_commit, offset_fetch, list_groups, describe_groups, delete_groups,
                     offset_delete)
    security_modules = (sasl_handshake, sasl_authenticate)
    return {module.API_KEY: _entry(module)
            for module in modules + group_modules + security_modules}


# Keyed by the int api key of a request header (ApiKey members hash equal to their ints).
API_TABLE: dict[int, ApiEntry] = _build_table()
