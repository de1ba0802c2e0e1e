"""DescribeLogDirs (35) v1-4: this broker's log dirs, the partitions each holds and their
sizes, as ``kafka-log-dirs``, kafka-python's ``describe_log_dirs`` and the web UIs that show
topic sizes ask (each broker answers for its own dirs; clients ask every broker).

Kafka's rules: the caller needs Describe on the cluster (else no results and, from v3,
CLUSTER_AUTHORIZATION_FAILED; tenants never have it, their console shows their sizes);
null topics means every hosted partition, named partitions this broker does not hold are
left out; an offline dir (a failed disk, KIP-112) is listed with KAFKA_STORAGE_ERROR and
no partitions; ``offset_lag`` is how far the log end is behind the high watermark (0 but
for a follower still catching up on its own leader's view); there are no future replicas
(AlterReplicaLogDirs is not served).  v4 adds each dir's filesystem size and free space.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brokerd.protocol import ApiKey, ErrorCode
from brokerd.security import AclOperation as Op
from brokerd.security import ResourceType as Rt
from brokerd.server.tenancy import ApiNames, Body, Gate, Names
from brokerd.server.tenancy_rules import CLUSTER_DENIED

if TYPE_CHECKING:
    from brokerd.protocol import bodies
    from brokerd.server.context import HandlerContext
    from brokerd.server.request import Request

API_KEY = ApiKey.DESCRIBE_LOG_DIRS
MIN_VERSION, MAX_VERSION = 1, 4
UNKNOWN_BYTES = -1


def _denied(body: Mapping[str, Any], error: ErrorCode) -> Body:
    return {"throttle_time_ms": 0, "error_code": int(error), "results": []}


TENANCY = ApiNames(
    request=(Names(("topics", "topic"), Rt.TOPIC),),
    response=(Names(("results", "topics", "name"), Rt.TOPIC),),
    gates=(Gate(Rt.CLUSTER, Op.DESCRIBE, CLUSTER_DENIED, _denied),))


def _wanted(body: bodies.DescribeLogDirsRequest) -> set[tuple[str, int]] | None:
    topics = body["topics"]
    if topics is None:
        return None
    return {(topic["topic"], partition) for topic in topics for partition in topic["partitions"]}


def _space(log_dir: Path) -> tuple[int, int]:
    """(total, usable) bytes of the filesystem holding ``log_dir``; unknown if unreadable."""
    try:
        usage = shutil.disk_usage(log_dir)
    except OSError:
        return UNKNOWN_BYTES, UNKNOWN_BYTES
    return usage.total, usage.free


async def handle(broker: HandlerContext, request: Request[bodies.DescribeLogDirsRequest]
                 ) -> bodies.DescribeLogDirsResponse:
    manager = broker.replicas.log_manager
    wanted = _wanted(request.body)
    by_dir: dict[Path, dict[str, list[bodies.DescribeLogDirsResponsePartition]]] = {}
    for (topic, partition), log in sorted(manager.all_logs().items()):
        log_dir = manager.log_dir_of(topic, partition)
        if log_dir is None or (wanted is not None and (topic, partition) not in wanted):
            continue
        hosted = broker.replicas.get(topic, partition)
        lag = 0 if hosted is None else max(hosted.high_watermark - hosted.log_end_offset, 0)
        by_dir.setdefault(log_dir, {}).setdefault(topic, []).append(
            {"partition_index": partition, "partition_size": log.size_bytes, "offset_lag": lag,
             "is_future_key": False})
    results: list[bodies.DescribeLogDirsResponseResult] = []
    for log_dir in manager.log_dirs:
        if log_dir in manager.offline_dirs:
            results.append({"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR),
                            "log_dir": str(log_dir), "topics": [],
                            "total_bytes": UNKNOWN_BYTES, "usable_bytes": UNKNOWN_BYTES})
            continue
        total, usable = _space(log_dir)
        topics = by_dir.get(log_dir, {})
        results.append({"error_code": 0, "log_dir": str(log_dir),
                        "topics": [{"name": name, "partitions": partitions}
                                   for name, partitions in topics.items()],
                        "total_bytes": total, "usable_bytes": usable})
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}
