"""The density benchmark's decisions and report, on made-up figures (no processes)."""

from __future__ import annotations

from typing import Any, cast

from bench import density, request_ceiling
from bench.density import sustained
from bench.density_report import render


def step(rates: list[int], received: int, p99_ms: float) -> dict[str, Any]:
    return {"producer_rates": rates, "consumer": {"records": received, "p99_ms": p99_ms}}


def test_a_step_is_sustained_when_it_kept_up_under_the_bound() -> None:
    assert sustained(step([2_000, 1_990], 16_000, 9.0), 4_000, 4.0, 10.0)


def test_a_step_over_the_p99_bound_or_behind_is_not_sustained() -> None:
    assert not sustained(step([2_000, 2_000], 16_000, 10.5), 4_000, 4.0, 10.0)
    assert not sustained(step([2_000, 1_500], 16_000, 3.0), 4_000, 4.0, 10.0)  # producers
    assert not sustained(step([2_000, 2_000], 12_000, 3.0), 4_000, 4.0, 10.0)  # consumer


def results() -> dict[str, Any]:
    latency = {"producer": {"records_per_second": 2_000, "broker_cpu_share": 0.3,
                            "other_cpu_share": 0.1},
               "consumer": {"records": 20_000, "p50_ms": 2.0, "p99_ms": 9.0, "max_ms": 20.0}}
    broker = {"cores": 0.06, "cores_per_1000_partitions": 0.06, "rss_mb": 50.0,
              "open_files": 3_000, "memory_maps": 2_000}
    peer_latency = {"records": 20_000, "p50_ms": 0.5, "p99_ms": 3.0, "max_ms": 9.0}
    peer_rate = {"messages_per_second": 50_000, "mb_per_second": 50.0}
    return {
        "started_at": "2026-11-24 13:00:00Z", "cpus": 2, "load_average": 0.5, "seconds": 600,
        "limits": {"open_files": 20_000, "max_map_count": 80_000, "changes": ["raised"]},
        "default_path": {
            "latency linger.ms=0": latency,
            "search linger.ms=0": {"best_rate": 4_000, "p99_bound_ms": 10.0, "steps": [
                {"rate": 2_000, "producers": 1, "sustained": True, "consumer": {"p99_ms": 4}},
                {"rate": 4_000, "producers": 2, "sustained": False,
                 "consumer": {"p99_ms": 40}, "producer_cpu": 0.35,
                 "produce_requests_per_second": 1_500, "brokers_cpu_us_per_request": 620}]},
            "latency linger.ms=5": {"error": "RuntimeError: boom"},
            "search linger.ms=0, several producers": {"best_rate": 4_000, "p99_bound_ms": 20.0,
                                                      "steps": []},
            "ceiling": {"several producers at nice 0": {
                "best_rate": 8_000, "p99_bound_ms": 20.0, "nice": 0, "steps": [
                    {"rate": 8_000, "sustained": True, "produce_requests_per_second": 7_100,
                     "producers_cores": 0.93, "null_broker_cpu_us_per_request": 105},
                    {"rate": 10_000, "sustained": False}]},
                "several producers at nice 10": {
                    "best_rate": 0, "p99_bound_ms": 20.0, "nice": 10, "steps": [
                        {"rate": 2_000, "sustained": False}]}},
            "ratio": {"acks=all RF=3": {"mb_per_second": 40.0},
                      "acks=1 RF=1": {"mb_per_second": 100.0}, "ratio": 0.4}},
        "partitions": {
            "counts": [{"target": 1_000, "reached": True, "created": 1_000, "in_sync": 1_000,
                        "grow_seconds": 9.5, "brokers": {"1": broker, "2": broker},
                        "other_cores": 0.1, "error": None},
                       {"target": 30_000, "reached": False, "created": 0, "in_sync": 0,
                        "grow_seconds": 0.0, "brokers": {}, "other_cores": 0.0,
                        "error": "not attempted: descriptors"}],
            "failover": {"partitions": 1_006, "led_by_victim": 335, "kill_s": 7.0,
                         "writable_s": 8.5, "writable_p50_s": 7.5, "preferred_s": 2.0,
                         "controlled_s": 1.0, "shutdown_s": 1.5,
                         "produce_errors": []}},
        "connections": {"error": "TimeoutError: x"},
        "peers": {"nats_jetstream": {"server": "nats://127.0.0.1:4222", "storage": "file",
                                     "replicas": 1, "latency": peer_latency,
                                     "throughput": peer_rate, "private_server": False},
                  "redis_streams": {"error": "ConnectionError: refused"}},
    }


def test_report_prints_every_phase_failures_and_ratios_to_peers() -> None:
    text = render(results())
    assert "highest rate with p99 <= 10 ms: 4,000 records/s" in text
    assert ("4,000/s (2p, the first 0.35 cores, 1,500 requests/s, brokers 620 µs/request) "
            "p99 40 ms MISSED") in text
    assert "2,000/s (1p, the first - cores, requests/s -, brokers - µs/request) p99 4 ms ok" in text
    assert "latency linger.ms=5: FAILED: RuntimeError: boom" in text
    assert "= 0.4" in text
    assert "not attempted: descriptors" in text
    assert "led_by_victim" not in text and "leading 335 of 1,006 partitions" in text
    assert "new leaders everywhere 7.0 s, sampled partitions writable (acks=all) 8.5 s" in text
    assert "idle connections: FAILED: TimeoutError: x" in text
    assert "ratio p50 4.00, p99 3.00" in text  # ours 2.0 / 0.5 and 9.0 / 3.0
    assert "ratio 0.80 (acks=all), 2.00 (acks=1)" in text
    assert "Redis Streams: FAILED: ConnectionError: refused" in text
    assert ("ceiling, several producers at nice 0 against a null broker (produce round trip "
            "p99 <= 20 ms): 8,000 records/s (7,100 requests/s; producers 0.93 cores, null "
            "broker 105 µs/request); ours / ceiling = 0.50") in text
    assert ("several producers at nice 10 against a null broker (produce round trip p99 <= "
            "20 ms): 0 records/s (-; producers - cores, null broker - µs/request); "
            "ours / ceiling = -") in text  # nothing sustained, and no search of ours


def test_a_failure_carrying_a_broker_log_is_cut_to_its_first_line() -> None:
    figures = results()
    figures["partitions"]["failover"] = {"error": "TimeoutError: broker did not answer\n"
                                                  + "log line\n" * 1_000}
    text = render(figures)
    assert "failover: FAILED: TimeoutError: broker did not answer" in text
    assert "log line" not in text


def test_requests_per_second_adds_the_producers_and_is_unknown_if_one_is() -> None:
    assert density.requests_per_second({"producer_request_rates": [900, 1_100]}) == 2_000
    assert density.requests_per_second({"producer_request_rates": [900, None]}) is None


def test_brokers_cpu_per_request_divides_by_the_requests_sent() -> None:
    figures = {"producer_request_rates": [1_000, 1_000], "brokers_cpu_s": 3.6}
    assert density.brokers_cpu_per_request_us(figures, 4.0) == 450
    assert density.brokers_cpu_per_request_us(
        {**figures, "producer_request_rates": [1_000, None]}, 4.0) is None
    assert density.brokers_cpu_per_request_us(
        {**figures, "producer_request_rates": [0]}, 4.0) is None


def test_a_spent_search_budget_is_reported_as_a_skipped_step() -> None:
    figures = results()
    figures["default_path"]["search linger.ms=0"]["steps"].append(
        {"rate": 6_000, "skipped": "search time budget spent"})
    assert "6,000/s search time budget spent" in render(figures)


def test_the_linger_0_searches_use_topics_of_their_own(monkeypatch: Any) -> None:
    """default_path searches linger.ms=0 three times (the 10 ms bound, and the
    several-producer 20 ms bound at normal priority and nicer) in one cluster; each step
    creates a fresh topic, so each search's names must differ (it failed with
    TOPIC_ALREADY_EXISTS when they did not).  Only the last search's producers are nicer."""
    topics: list[str] = []
    nices: list[int] = []

    def fake_probe(cluster: Any, topic: str, rate: int, seconds: float, linger_ms: int,
                   producers: int, nice: int = 0) -> dict[str, Any]:
        topics.append(topic)
        nices.append(nice)
        return {"consumer": {"records": 0, "p99_ms": 1e9}, "producer_rates": [0],
                "producer_request_rates": [0], "producer": {"client_cpu_share": 0.1},
                "brokers_cpu_s": 0.0}

    monkeypatch.setattr(density, "probe", fake_probe)
    monkeypatch.setattr(density, "throughput", lambda *args: {})
    monkeypatch.setattr(request_ceiling, "measure", lambda plan: {})
    plan = density.DensityPlan(lingers_ms=(0,))
    density.default_path(cast(Any, None), plan)
    # the latency probe and each search's first step (which misses its bound)
    assert len(topics) == len(set(topics)) == 4
    assert nices == [0, 0, 0, plan.client_nice]
