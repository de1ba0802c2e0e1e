"""Target verdicts and rendering of bench.report, and the latency payload stamp."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.latency_client import read_stamp, stamped_payload
from bench.report import limited_by, ratio, render, target_verdicts, write_json


def figures(records_per_second: int, mb_per_second: float) -> dict[str, Any]:
    return {"records": 1000, "records_per_second": records_per_second,
            "mb_per_second": mb_per_second, "seconds": 1.0, "client_cpu_share": 0.5,
            "broker_cpu_share": 0.9, "other_cpu_share": 0.1}


def results(**throughput: dict[str, Any]) -> dict[str, Any]:
    return {"started_at": "2026-01-01 00:00:00Z", "cpus": 2, "load_average": 0.5,
            "throughput": {k.replace("_", " "): v for k, v in throughput.items()},
            "ceiling": {"bytes": 10**9, "loopback_tcp_mb_per_second": 1000.0,
                        "file_write_mb_per_second": 500.0,
                        "file_write_fsync_mb_per_second": 250.0}}


def test_verdicts_compare_the_named_figure_with_the_minimum() -> None:
    verdicts = target_verdicts(results(**{
        "produce_1 KiB": figures(150_000, 150.0),
        "consume_1 KiB": figures(290_000, 299.9),
        "produce_100 B": figures(299_999, 30.0)}))
    assert verdicts == {"produce 1 KiB": "met >= 150 MB/s",
                        "consume 1 KiB": "MISSED >= 300 MB/s",
                        "produce 100 B": "MISSED >= 300k rec/s"}


def test_failed_or_missing_phases_get_no_verdict() -> None:
    assert target_verdicts(results(**{"produce_1 KiB": {"error": "boom"}})) == {}


def test_render_shows_ratios_to_the_ceiling_and_failures() -> None:
    text = render(results(**{"produce_1 KiB": figures(200_000, 250.0),
                             "consume_1 KiB": {"error": "RuntimeError: gone"}}))
    produce_line = next(line for line in text.splitlines() if line.startswith("produce 1 KiB"))
    assert "0.25" in produce_line and "0.50" in produce_line  # 250/1000 and 250/500
    assert "met >= 150 MB/s" in produce_line
    assert "consume 1 KiB   FAILED: RuntimeError: gone" in text
    assert "loopback TCP 1000.0 MB/s" in text


def test_ratio_of_missing_figures_is_a_dash() -> None:
    assert ratio(None, 10.0) == "-"
    assert ratio(5.0, 0.0) == "-"
    assert ratio(5.0, 10.0) == "0.50"


def test_json_round_trips(tmp_path: Path) -> None:
    data = results(**{"produce_1 KiB": figures(1, 2.0)})
    write_json(data, tmp_path / "out" / "latest.json")
    assert json.loads((tmp_path / "out" / "latest.json").read_text()) == data


def test_latency_stamp_survives_padding() -> None:
    payload = stamped_payload(1_700_000_000_123_456_789, 100)
    assert len(payload) == 100
    assert read_stamp(payload) == 1_700_000_000_123_456_789


def shares(client: float, broker: float, other: float) -> dict[str, Any]:
    return {"client_cpu_share": client, "broker_cpu_share": broker, "other_cpu_share": other}


def test_limited_by_names_the_saturated_process_broker_first() -> None:
    assert limited_by(shares(0.95, 0.9, 0.0), cpus=2) == "broker CPU"
    assert limited_by(shares(0.9, 0.3, 0.0), cpus=2) == "client CPU"


def test_limited_by_blames_a_full_machine_then_waiting() -> None:
    assert limited_by(shares(0.5, 0.5, 0.9), cpus=2) == "all CPUs busy"
    assert limited_by(shares(0.5, 0.5, 0.2), cpus=2) == "no CPU (waits)"


def test_rebalance_section_shows_median_and_maximum() -> None:
    data = results()
    data["rebalance"] = {"rounds": 3, "heartbeat_ms": 3000, "samples_ms": [1.0, 2.0, 3.0],
                         "p50_ms": 1500.4, "max_ms": 2999.6}
    assert "p50 1500 ms, max 3000 ms" in render(data)
