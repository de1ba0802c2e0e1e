"""The latency probe's producer settings: defaults kept for ``make bench``'s acks=1 probe,
the default-client path (acks=all, idempotence) selectable, impossible mixes refused; the
Produce request count read from librdkafka's statistics."""

from __future__ import annotations

import json

import pytest

from bench.latency_client import PRODUCER_CONFIG, ProduceRequests, main, producer_config


def test_defaults_are_the_original_acks_1_linger_5_probe() -> None:
    config = producer_config()
    assert config["acks"] == 1 and config["linger.ms"] == 5
    assert config["enable.idempotence"] is False
    assert {k: config[k] for k in PRODUCER_CONFIG} == PRODUCER_CONFIG


def test_default_client_path_is_acks_all_idempotent() -> None:
    config = producer_config("all", 0, idempotence=True)
    assert config["acks"] == "all" and config["linger.ms"] == 0
    assert config["enable.idempotence"] is True


def test_idempotence_without_acks_all_is_refused() -> None:
    with pytest.raises(ValueError):
        producer_config("1", 5, idempotence=True)


def test_command_line_refuses_idempotence_with_acks_1(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["produce", "--bootstrap", "127.0.0.1:1", "--topic", "t", "--idempotence"])
    assert exit_info.value.code == 2
    assert "idempotence needs acks=all" in capsys.readouterr().err


def test_produce_requests_are_counted_over_every_broker_from_the_latest_report() -> None:
    requests = ProduceRequests()
    b1: dict[str, int] = {"Produce": 7, "Metadata": 3}
    report = {"brokers": {"b1": {"req": b1}, "b2": {"req": {"Produce": 5}},
                          "bootstrap": {"req": {}}}}
    requests.on_statistics(json.dumps(report))
    b1["Produce"] = 9
    requests.on_statistics(json.dumps(report))
    assert (requests.sent, requests.reports) == (14, 2)
