"""The probe's counters: the cached labelled children must keep counting into the same
series the registry exposes."""

from __future__ import annotations

from pathlib import Path

from brokerd.server.metrics import BrokerProbe
from brokerd.storage.file_cache import OpenFileCache, SegmentFile


def test_request_and_byte_counters_accumulate_per_label() -> None:
    probe = BrokerProbe()
    probe.request_done("Produce", 9, 0.002)
    probe.request_done("Produce", 9, 0.004)
    probe.request_done("Fetch", 12, 0.5)
    probe.bytes_in("orders", 100, 2)
    probe.bytes_in("orders", 50, 1)
    probe.bytes_out("orders", 70)
    sample = probe.registry.get_sample_value
    assert sample("kafka_network_requests_total", {"api": "Produce", "version": "9"}) == 2
    assert sample("kafka_network_requests_total", {"api": "Fetch", "version": "12"}) == 1
    assert sample("kafka_network_request_seconds_count", {"api": "Produce"}) == 2
    seconds = sample("kafka_network_request_seconds_sum", {"api": "Produce"})
    assert seconds is not None and abs(seconds - 0.006) < 1e-9
    # cumulative buckets, each holding what is at or below its bound
    def bucket(api: str, le: str) -> float | None:
        return sample("kafka_network_request_seconds_bucket", {"api": api, "le": le})

    assert [bucket("Produce", le) for le in ("0.001", "0.0025", "0.005", "+Inf")] == [
        0, 1, 2, 2]
    assert [bucket("Fetch", le) for le in ("0.25", "0.5", "30.0", "+Inf")] == [0, 1, 1, 1]
    assert sample("kafka_server_bytes_in_total", {"topic": "orders"}) == 150
    assert sample("kafka_server_messages_in_total", {"topic": "orders"}) == 3
    assert sample("kafka_server_bytes_out_total", {"topic": "orders"}) == 70


def test_the_open_file_cache_is_exposed(tmp_path: Path) -> None:
    files = OpenFileCache(1)
    probe = BrokerProbe(open_files=files)
    for name in ("a.log", "b.log"):
        with SegmentFile(tmp_path / name, files):
            pass
    sample = probe.registry.get_sample_value
    assert sample("brokerd_log_open_files") == 1
    assert sample("brokerd_log_open_files_max") == 1
    assert sample("brokerd_log_file_opens_total") == 2
    assert sample("brokerd_log_file_evictions_total") == 1
