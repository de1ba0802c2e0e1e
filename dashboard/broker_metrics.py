"""Fetching every live broker's Prometheus text: the console's only view of broker state
that ZooKeeper does not hold (quota usage, log sizes).

Each broker's ``/brokers/ids/<id>`` registration names its ``metrics_port`` (our addition to
Kafka's format); a broker that does not answer within :data:`SCRAPE_TIMEOUT_S` is reported,
not waited for, so a page still renders with one broker down.
"""

from __future__ import annotations

import json
import urllib.request

from kazoo.client import KazooClient

from tenants.zookeeper import read

SCRAPE_TIMEOUT_S = 2.0


def metrics_urls(registrations: dict[int, bytes]) -> dict[int, str]:
    """broker id -> its metrics URL, for brokers that advertise a metrics port."""
    urls = {}
    for broker_id, data in registrations.items():
        value = json.loads(data) if data else {}
        port = int(value.get("metrics_port", -1))
        host = value.get("host") or next(
            (url.split("://", 1)[1].rpartition(":")[0] for url in value.get("endpoints", [])), "")
        if port > 0 and host:
            urls[broker_id] = f"http://{host}:{port}/metrics"
    return urls


def fetch_metrics(zk: KazooClient) -> tuple[dict[int, str], list[int]]:
    """Every registered broker's metrics text by broker id, and the ids that did not answer."""
    ids = [int(child) for child in zk.get_children("/brokers/ids")] if zk.exists(
        "/brokers/ids") else []
    registrations = {i: read(zk, f"/brokers/ids/{i}") or b"" for i in ids}
    texts: dict[int, str] = {}
    unreachable: list[int] = []
    for broker_id, url in sorted(metrics_urls(registrations).items()):
        try:
            with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as response:  # noqa: S310
                texts[broker_id] = response.read().decode()
        except OSError:
            unreachable.append(broker_id)
    return texts, unreachable
