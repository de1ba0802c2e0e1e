"""The broker's Prometheus probe, kept apart from request logic (Redpanda's ``*_probe``).

Handlers call a handful of plain methods (``bytes_in``, ``request_done``…); only this
module knows metric names and label sets.  Each broker has its own registry, so tests can
run several brokers in one process without colliding in the global registry.

Exposed (Prometheus text format on ``--metrics-port``):

* ``kafka_server_bytes_in_total{topic}``, ``kafka_server_bytes_out_total{topic}``,
  ``kafka_server_messages_in_total{topic}`` (counters; messages = records);
* ``kafka_network_request_seconds{api}`` (histogram of handling latency, decode to
  response handed to the socket);
* ``kafka_network_requests_total{api,version}``;
* ``kafka_log_size_bytes{topic,partition}`` (gauge, read from the logs at scrape time);
* ``brokerd_log_open_files`` and ``brokerd_log_open_files_max`` (gauges: segment files
  and index mappings open now, and ``log.max.open.files``), ``brokerd_log_file_opens_total``
  and ``brokerd_log_file_evictions_total`` (counters: opens and reopens, and closes to stay
  within the budget; a steadily growing eviction count means the budget is too small for
  the partitions in use).  Process-wide, like the descriptor limit
  (:mod:`brokerd.storage.file_cache`);
* per client-quota entity (labels ``quota_type`` = produce|fetch|request, ``tenant``,
  ``user``, ``client_id``; empty when the quota is not split by that tag):
  ``kafka_quota_rate`` (gauge: bytes/s, or for ``request`` percent of one handler thread —
  the request time), ``kafka_quota_limit`` (gauge, with ``source``: the level it came from;
  absent when unlimited), ``kafka_quota_throttle_time_ms_total`` and
  ``kafka_quota_throttled_total`` (counters).  Read from the snapshot the broker takes on
  its loop every second, so a scrape never walks live quota state.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from brokerd.quota import EntityMetrics, QuotaType
from brokerd.storage.file_cache import OPEN_FILES, OpenFileCache

# Latency buckets (seconds): sub-millisecond metadata answers up to long-polled fetches.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, 30.0)

LogSizes = Callable[[], Iterable[tuple[str, int, int]]]


class _RequestTally(Collector):
    """Requests per (api, version) and their handling time per api, as plain numbers the
    loop thread adds to and a scrape reads.  Every request is counted here, and
    prometheus_client's ``Counter.inc`` and ``Histogram.observe`` take a lock and walk
    the buckets in Python: about a tenth of a small request's own handling time."""

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self._bounds = buckets
        self._requests: dict[tuple[str, int], int] = {}
        # api -> count in each bucket (not cumulative; the last is +Inf), and seconds in all
        self._buckets: dict[str, list[int]] = {}
        self._seconds: dict[str, float] = {}

    def add(self, api: str, version: int, seconds: float) -> None:
        key = (api, version)
        self._requests[key] = self._requests.get(key, 0) + 1
        buckets = self._buckets.get(api)
        if buckets is None:
            buckets = self._buckets[api] = [0] * (len(self._bounds) + 1)
        # The first bucket whose bound is >= seconds, as Prometheus's ``le`` has it.
        buckets[bisect.bisect_left(self._bounds, seconds)] += 1
        self._seconds[api] = self._seconds.get(api, 0.0) + seconds

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        requests = CounterMetricFamily("kafka_network_requests", "Requests handled",
                                       labels=["api", "version"])
        for (api, version), count in list(self._requests.items()):
            requests.add_metric([api, str(version)], count)
        yield requests
        latency = HistogramMetricFamily("kafka_network_request_seconds",
                                        "Request handling time", labels=["api"])
        bounds = [floatToGoString(bound) for bound in self._bounds] + ["+Inf"]
        for api, counts in list(self._buckets.items()):
            cumulative, running = [], 0
            for bound, count in zip(bounds, list(counts), strict=True):
                running += count
                cumulative.append((bound, running))
            latency.add_metric([api], cumulative, sum_value=self._seconds.get(api, 0.0))
        yield latency


class _LogSizeCollector(Collector):
    def __init__(self, sizes: LogSizes) -> None:
        self._sizes = sizes

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("kafka_log_size_bytes", "Bytes on disk per partition log",
                                   labels=["topic", "partition"])
        for topic, partition, size in self._sizes():
            family.add_metric([topic, str(partition)], size)
        yield family


class _OpenFilesCollector(Collector):
    def __init__(self, files: OpenFileCache) -> None:
        self._files = files

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        files = self._files
        yield GaugeMetricFamily("brokerd_log_open_files",
                                "Segment files and index mappings open", value=files.open_count)
        yield GaugeMetricFamily("brokerd_log_open_files_max", "log.max.open.files",
                                value=files.max_open)
        yield CounterMetricFamily("brokerd_log_file_opens", "Segment files opened or reopened",
                                  value=files.opens)
        yield CounterMetricFamily("brokerd_log_file_evictions",
                                  "Segment files closed to stay within log.max.open.files",
                                  value=files.evictions)


QuotaMetrics = Callable[[], Iterable[EntityMetrics]]
QUOTA_LABELS = ["quota_type", "tenant", "user", "client_id"]
QUOTA_TYPE_LABELS = {QuotaType.PRODUCE: "produce", QuotaType.FETCH: "fetch",
                     QuotaType.REQUEST: "request"}


class _QuotaCollector(Collector):
    def __init__(self, snapshot: QuotaMetrics) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        rate = GaugeMetricFamily("kafka_quota_rate", "Measured rate per quota entity "
                                 "(bytes/s; request: percent of one handler)",
                                 labels=QUOTA_LABELS)
        limit = GaugeMetricFamily("kafka_quota_limit", "Effective quota per entity",
                                  labels=[*QUOTA_LABELS, "source"])
        throttle = CounterMetricFamily("kafka_quota_throttle_time_ms",
                                       "Throttle time handed out per entity",
                                       labels=QUOTA_LABELS)
        throttled = CounterMetricFamily("kafka_quota_throttled", "Throttled responses per entity",
                                        labels=QUOTA_LABELS)
        for metrics in self._snapshot():
            entity = metrics.entity
            labels = [QUOTA_TYPE_LABELS[metrics.quota_type], entity.tenant, entity.user,
                      entity.client_id]
            rate.add_metric(labels, metrics.rate)
            if metrics.limit is not None:
                limit.add_metric([*labels, metrics.source], metrics.limit)
            throttle.add_metric(labels, metrics.throttle_time_ms_total)
            throttled.add_metric(labels, metrics.throttled_total)
        yield from (rate, limit, throttle, throttled)


class BrokerProbe:
    """Counters and histograms of one broker, in a registry of its own."""

    def __init__(self, log_sizes: LogSizes = lambda: (),
                 quota_metrics: QuotaMetrics = lambda: (),
                 open_files: OpenFileCache = OPEN_FILES) -> None:
        self.registry = CollectorRegistry()
        self._bytes_in = Counter("kafka_server_bytes_in", "Record bytes produced",
                                 ["topic"], registry=self.registry)
        self._bytes_out = Counter("kafka_server_bytes_out", "Record bytes fetched",
                                  ["topic"], registry=self.registry)
        self._messages_in = Counter("kafka_server_messages_in", "Records produced",
                                    ["topic"], registry=self.registry)
        self._requests = _RequestTally()
        self.registry.register(self._requests)
        self.registry.register(_LogSizeCollector(log_sizes))
        self.registry.register(_QuotaCollector(quota_metrics))
        self.registry.register(_OpenFilesCollector(open_files))
        self._http_server: Any = None
        # Labelled children by label values: ``labels()`` takes a lock and rebuilds the
        # key on every call, a measurable share of a small request's handling time.
        self._topic_children: dict[str, tuple[Any, Any, Any]] = {}

    def _per_topic(self, topic: str) -> tuple[Any, Any, Any]:
        children = self._topic_children.get(topic)
        if children is None:
            children = (self._bytes_in.labels(topic), self._messages_in.labels(topic),
                        self._bytes_out.labels(topic))
            self._topic_children[topic] = children
        return children

    def bytes_in(self, topic: str, nbytes: int, records: int) -> None:
        bytes_in, messages_in, _ = self._per_topic(topic)
        bytes_in.inc(nbytes)
        messages_in.inc(records)

    def bytes_out(self, topic: str, nbytes: int) -> None:
        self._per_topic(topic)[2].inc(nbytes)

    def request_done(self, api: str, version: int, seconds: float) -> None:
        self._requests.add(api, version, seconds)

    def serve(self, port: int, host: str = "0.0.0.0") -> None:
        """Expose the registry over HTTP from a daemon thread (prometheus_client's)."""
        self._http_server, _ = start_http_server(port, addr=host, registry=self.registry)

    def stop(self) -> None:
        if self._http_server is not None:
            self._http_server.shutdown()
            self._http_server.server_close()
            self._http_server = None
